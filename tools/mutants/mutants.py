"""Mutation testing of `aaemu verify`: each mutant is one broken rule applied
as a file overlay (the tree is never touched); JOBS mutants at a time,
default the CPU count. The verify command is built alone
(tools/mutants/verifier: `aaemu verify` and `aaemu verify mpi`, the same code,
without the rest of aaemu), once, without inlining in aaemu's own packages;
a mutant's verifier is then its package compiled with the overlay and
linked with the tree's other archives (class Tree: sound when the mutant
leaves its package's export data alone, which the linker checks; else it
is built whole with `go build -overlay`). A mutant keeps its file's line
count, so that the positions in the export data stay. `aaemu verify` with
its default seed counts runs against each mutant (and `verify mpi` against
those of the message layers), and a mutant is killed when one fails. A
mutant the verifier cannot see may name an existing test instead (`go test
-run` of its package, with the same overlay). Prints each mutant's fate,
the kill rate and the CPU time; exits non-zero if a non-equivalent mutant
survives.

Equivalent mutants (argued, so not in the list): making the up link's
transmit queue deeper (QueueTLPs) changes timing only, never a rule; a
completer splitting at 128 B where the link's RCB is 64 B obeys the rule
(128-byte boundaries are 64-byte boundaries too); not reading a log's
head again when a reservation finds the ring full is caught up by the
IOMMU's head poll (HeadPollPS) while the TLP waits, so it delays the TLP
and changes nothing else (measured: it survives, and every record, its
order and the memory stay right)."""
import concurrent.futures, json, os, subprocess, sys, tempfile, time

# (name, file, original text, mutated text)
MUTANTS = [
    # (Returned at once, the credits would wake the link at the present
    # edge, which the kernel refuses with a panic: a crash, not a check.)
    ("pcie: credits returned after half the UpdateFC latency",
     "pcie/dir.go", "at := d.u.Engine().Now() + d.spec.UpdateFCLatency", "at := d.u.Engine().Now() + d.spec.UpdateFCLatency/2"),
    ("pcie: credits returned when a TLP arrives, not when the receiver frees it",
     "pcie/dir.go", "\t\td.Out.SendLane(int(c), f.p)\n", "\t\td.Out.SendLane(int(c), f.p); d.release(&f.p)\n"),
    ("pcie: a completion split one DW before the RCB",
     "pcie/dma.go", "end := (dwStart + uint64(s.MPS)) &^ uint64(s.RCB-1)", "end := (dwStart+uint64(s.MPS))&^uint64(s.RCB-1) - 4"),
    ("pcie: a completion's Lower Address from its DW, not its first byte",
     "pcie/dma.go", "tlp.SC, remaining, uint8(addr&0x7f), data)", "tlp.SC, remaining, uint8(dwStart&0x7f), data)"),
    ("pcie: Byte Count of the request, not the bytes still to come",
     "pcie/dma.go", "tlp.SC, remaining, uint8(addr&0x7f), data)", "tlp.SC, total, uint8(addr&0x7f), data)"),
    ("pcie: a write segment crossing its MPS boundary",
     "pcie/dma.go", "room := max - int(addr%uint64(max))", "room := max"),
    ("pcie: a completion passes an earlier posted write on the link (D2a)",
     "pcie/dir.go", "\t\treturn t.RO || (t.IDO && t.CompleterID != earlier.RequesterID)", "\t\treturn true"),
    ("pcie: a read taken past a waiting posted write (B2a)",
     "pcie/order.go", "if n == 1 || tlp.Class(first) == tlp.Posted {", "if n == 1 {"),
    ("nic: a new request's PSN not advanced",
     "nic/qp.go", "\t\tp.PSN = q.nextPSN\n\t\tq.nextPSN = (q.nextPSN + 1) & 0xffffff", "\t\tp.PSN = q.nextPSN\n\t\tif p.Opcode != roce.WriteMiddle { q.nextPSN = (q.nextPSN + 1) & 0xffffff }"),
    ("nic: a duplicate write executed again",
     "nic/qp.go", "\t\tn.stDupes.Inc()\n\t\tq.duplicate(f)", "\t\tn.stDupes.Inc()\n\t\tif len(p.Payload) > 0 && p.Opcode == roce.WriteOnly { n.dmaWrite(p.RETH.VA, p.Payload, f.ID) }; q.duplicate(f)"),
    ("nic: an ACK before the request is received (ACK of the next PSN)",
     "nic/qp.go", "\t\tif p.AckReq {\n\t\t\tq.ack(p.PSN, roce.SyndromeAck, f.ID)\n\t\t}\n\tcase roce.SendFirst", "\t\tif p.AckReq {\n\t\t\tq.ack((p.PSN+1)&0xffffff, roce.SyndromeAck, f.ID)\n\t\t}\n\tcase roce.SendFirst"),
    ("memory: a read performed before an earlier write",
     "memory/controller.go", "if rd && (!w || c.pending[1].Front().seq < c.pending[0].Front().seq) {", "if rd {"),
    ("memory: a write's last byte dropped",
     "memory/controller.go", "\t\tc.Store.Write(r.Addr, r.Data)", "\t\tc.Store.Write(r.Addr, r.Data[:max(len(r.Data)-1, 0)])"),
    ("iommu: a PAD record that takes no sequence number",
     "iommu/accesslog.go", "\t\tm.writeHeader(ls.base+pos, &h, nil)\n\t\tls.seq++", "\t\tm.writeHeader(ls.base+pos, &h, nil)\n"),
    ("iommu: the visible tail moved over records not yet written",
     "iommu/accesslog.go", "for n < len(ls.pend) && ls.pend[n].done {", "for n < len(ls.pend) {"),
    ("iommu: an Int log's MSI never sent",
     "iommu/accesslog.go", "\t\tm.sendMSI(ls.msiAddr, ls.msiData, 0)\n\t\tm.stLogMSIs.Inc()\n\t\treturn", "\n\t\tm.stLogMSIs.Inc()\n\t\treturn"),
    ("iommu: an Int log's MSI with the wrong vector",
     "iommu/accesslog.go", "\t\tm.sendMSI(ls.msiAddr, ls.msiData, 0)\n\t\tm.stLogMSIs.Inc()\n\t\treturn", "\t\tm.sendMSI(ls.msiAddr, ls.msiData+1, 0)\n\t\tm.stLogMSIs.Inc()\n\t\treturn"),
    ("iommu: the scratchpad mirror written into the next slot",
     "iommu/accesslog.go", "SPWrite{Slot: ls.msiData,", "SPWrite{Slot: ls.msiData + 1,"),
    ("iommu: a fault event for every fault, a fault pending or not",
     "iommu/faults.go", "\tif wasPending {\n\t\treturn false, false", "\tif false {\n\t\treturn false, false"),
    ("iommu: the fault overflow flag (PFO) never set",
     "iommu/faults.go", "\t\tf.pfo = true\n\t\treturn false, true", "\n\t\treturn false, true"),
    ("memory: a CAS that swaps when the compare fails",
     "memory/controller.go", "if string(cmp) == string(old) {", "if string(cmp) != string(old) {"),
    # Only driver calls during a run (Stimulus.Changes) see these: at
    # set-up the caches are empty when the driver invalidates them.
    ("iommu: a page-selective IOTLB invalidation misses its first page",
     "iommu/translate.go", "\t\tfor vpn := lo; vpn < hi; vpn++ {", "\t\tfor vpn := lo + 1; vpn < hi; vpn++ {"),
    ("iommu: a device-selective invalidation leaves the context cache",
     "iommu/translate.go", "\tm.ctxCache.Invalidate(sid)\n\tm.lastCtxValid = false", "\n\tm.lastCtxValid = false"),
    ("nic: every read response packet on the READ's first PSN",
     "nic/qp.go", "\t\tpsn = (psn + 1) & 0xffffff\n\t\tif end == r.n {", "\n\t\tif end == r.n {"),
    ("nic: a read answered before all its data came from the host",
     "nic/qp.go", "for len(q.reads) > 0 && q.reads[0].got >= q.reads[0].n {", "for len(q.reads) > 0 && q.reads[0].got > 0 {"),
    # Only the API level's second NIC, atomics and sends see these.
    ("nic: the second NIC's writes carry the first NIC's requester ID",
     "nic/nic.go", "n.spec.Sizes.AppendSegmentWrite(n.writes[:0], n.spec.ID, addr, data)", "n.spec.Sizes.AppendSegmentWrite(n.writes[:0], tlp.NewID(1, 0, 0), addr, data)"),
    ("nic: a duplicate atomic executed again (its saved result not used)",
     "nic/qp.go", "\t\t\tdefault:\n\t\t\t\tq.atomicAck(a)", "\t\t\tdefault:\n\t\t\t\ta.issued, a.done = false, false"),
    ("nic: a SEND delivered into the last receive request fetched, not the queue's head",
     "nic/qp.go", "\tr := q.rwqes[0]\n", "\tr := q.rwqes[len(q.rwqes)-1]\n"),
    # Only driver calls that remove a log or clear the fault records see
    # these.
    ("iommu: a log's cached entry kept when the driver invalidates it",
     "iommu/accesslog.go", "func (m *IOMMU) InvalidateLog(iuid uint16) { m.logs.Remove(iuid) }", "func (m *IOMMU) InvalidateLog(iuid uint16) { m.logs.Remove(iuid | 0x400) }"),
    ("iommu: software's write to clear the fault overflow flag (PFO) ignored",
     "iommu/faults.go", "func (m *IOMMU) ClearOverflow() { m.faults.pfo = false }", "func (m *IOMMU) ClearOverflow() { m.faults.pfo = m.faults.pfo }"),
    ("iommu: a fault pending while the record index has moved on (no fault event after software clears)",
     "iommu/faults.go", "\twasPending := f.ppf()\n", "\twasPending := f.ppf() || f.fri != f.next\n"),
    # Only large pages see this (in a 4 KB page the offset is nothing).
    ("iommu: a large page's frame without the 4 KB frame's offset within it",
     "iommu/translate.go", "frame := e&pte.AddrMask&^(size-1) | iova&(size-1)&^0xfff", "frame := e&pte.AddrMask&^(size-1)"),
    # Only accesses to the same IOVA from devices of two domains see this.
    ("iommu: the IOTLB tagged without the domain",
     "iommu/translate.go", "\tkey := makeTLBKey(c.did, iova>>12)\n\tif e, ok := m.iotlb.Lookup(key); ok {",
     "\tkey := makeTLBKey(1, iova>>12)\n\tif e, ok := m.iotlb.Lookup(key); ok {"),
    # Only driver calls on domain 2's pages see this (every other call is
    # domain 1's).
    ("iommu: a page-selective invalidation drops domain 1's entries, whatever domain it names",
     "iommu/translate.go", "\t\t\tm.iotlb.Invalidate(makeTLBKey(did, vpn))", "\t\t\tm.iotlb.Invalidate(makeTLBKey(1, vpn))"),
    # Only large pages split or merged during a run see this (a range of
    # more than 64 pages is invalidated otherwise only at set-up, when the
    # IOTLB is empty).
    ("iommu: a page-selective invalidation of a large range drops only its first 64 pages",
     "iommu/translate.go", "k.did() == did && k.vpn() >= lo && k.vpn() < hi })", "k.did() == did && k.vpn() >= lo && k.vpn() < lo+64 })"),
    # Only page calls racing the TLPs in flight see this: at a quiet point
    # the last TLP's late fill came long before the invalidation.
    ("iommu: an IOTLB fill when a TLP's walk is over, after an invalidation that came during it",
     "iommu/iommu.go", "\t\tm.finish(m.cur, now)\n",
     "\t\tif j := m.cur; j.tr.fault == 0 && j.tr.level == 1 && j.tr.did != 0 { m.iotlb.Insert(makeTLBKey(j.tr.did, j.iova>>12), tlbEntry{leaf: j.tr.leaf, frame: j.tr.pa &^ 0xfff, r: j.tr.r, w: j.tr.w, level: 1}) }; m.finish(m.cur, now)\n"),
    # Only a racing detach sees this: at a quiet point the last TLP was
    # over long before the device-selective invalidation.
    ("iommu: the last-context register made valid again when a translated TLP is over, after an invalidation that came during it",
     "iommu/iommu.go", "\t\tm.finish(m.cur, now)\n",
     "\t\tif m.cur.tr.fault == 0 { m.lastCtxValid = true }; m.finish(m.cur, now)\n"),
    # Only a racing split or merge sees this: the racing setbits, map and
    # unmap change 4 KB pages, and at a quiet point the last walk's fill
    # came long before the invalidation of the range.
    ("iommu: an IOTLB fill of a large page's 4 KB piece when a TLP's walk is over, after an invalidation that came during it",
     "iommu/iommu.go", "\t\tm.finish(m.cur, now)\n",
     "\t\tif j := m.cur; j.tr.fault == 0 && j.tr.level > 1 && j.tr.did != 0 { m.iotlb.Insert(makeTLBKey(j.tr.did, j.iova>>12), tlbEntry{leaf: j.tr.leaf, frame: j.tr.pa &^ 0xfff, r: j.tr.r, w: j.tr.w, level: j.tr.level}) }; m.finish(m.cur, now)\n"),
    # The CPU: local atomics, interrupts and uncached reads.
    ("cpu: a local CAS that swaps when the compare fails",
     "cpu/cpu.go", "\tif old == cmp {\n\t\tp.core.mem.Store64(addr, swap)", "\tif old != cmp {\n\t\tp.core.mem.Store64(addr, swap)",
     # (verify mpi never finishes on it: a lock taken with CAS spins.)
     ("test", "./cpu", "TestLocalAtomicsReturnTheOldWord")),
    ("cpu: a local fetch-and-add that returns the new value",
     "cpu/cpu.go", "\told := p.core.mem.Load64(addr)\n\tp.core.mem.Store64(addr, old+v)", "\told := p.core.mem.Load64(addr) + v\n\tp.core.mem.Store64(addr, old)",
     ("test", "./cpu", "TestLocalAtomicsReturnTheOldWord")),
    # (The API level's seeds with two Int logs see this: the second log's
    # MSI runs the first's handler, and its records are never handled.)
    ("cpu: an interrupt handler run for an MSI of another vector (address only)",
     "cpu/cpu.go", "if h.addr == t.Addr && h.data == data {", "if h.addr == t.Addr && (h.data == data || true) {"),
    ("cpu: an uncached read that failed returns its data, not all ones",
     "cpu/cpu.go", "\tif p.cplErr != nil {\n\t\tb := make([]byte, n)", "\tif false {\n\t\tb := make([]byte, n)",
     ("test", "./cpu", "TestUncachedReadUnsupported")),
    # The message layers: MPI matching and completion, the shared-memory
    # queues.
    ("msg/mpi: a receive that ignores the tag",
     "msg/mpi/comm.go", "(q.tag == AnyTag || q.tag == h.Tag)", "(q.tag == AnyTag || true)"),
    ("msg/mpi: a wildcard-source receive that ignores the communicator",
     "msg/mpi/comm.go", "return q.ctx == h.Ctx && (q.peer", "return (q.ctx == h.Ctx || q.peer == AnySource) && (q.peer"),
    ("msg/mpi: an unexpected message queued before the earlier ones (overtaking)",
     "msg/mpi/rank.go", "\tr.unexp = append(r.unexp, u)", "\tr.unexp = append([]*unexpected{u}, r.unexp...)"),
    ("msg/mpi: no truncation error",
     "msg/mpi/rank.go", "if q.size > q.buf.Len && q.err == nil {", "if false && q.size > q.buf.Len && q.err == nil {"),
    ("msg/mpi: a receive's count the message's size, not the bytes received",
     "msg/mpi/rank.go", "\t\tq.status.Count = q.count", "\t\tq.status.Count = q.size"),
    ("msg/mpi: an eager payload's last byte not copied",
     "msg/mpi/rank.go", "\t\tr.p.Write(dst, pl.Inline[:n])", "\t\tr.p.Write(dst, pl.Inline[:n-1])"),
    ("msg/shm: a packet's bulk length one byte short",
     "msg/shm/shm.go", "meta = uint64(block+1) | uint64(n)<<32", "meta = uint64(block+1) | uint64(n-1)<<32",
     ("test", "./msg/shm", "TestQueueManySenders")),
    ("msg/shm: a bulk block claimed without compare-and-swap",
     "msg/shm/shm.go", "\t\tif p.CAS(g.flag(dst, b), 0, 1) == 0 {", "\t\tif p.Store64(g.flag(dst, b), 1); true {"),
]

# Flags of every build: no inlining in aaemu's packages (a mutant's
# function bodies then stay out of its package's export data, so the
# packages above it need not compile again; verify runs as fast), the
# build tag that adds `verify mpi`, no symbol table (a shorter link).
GCFLAGS = "-gcflags=github.com/aaemu/aaemu/...=-l"
TAGS = ["-tags", "mpiverify"]
LDFLAGS = ["-s", "-w"]
VERIFIER = "./tools/mutants/verifier"


def run_verify(exe, d, args):
    """Runs one verify command; returns (failed, the lines it printed). The
    time limits are ten times what the tree takes on a loaded machine: a
    mutant that hangs the machine fails there."""
    limit = 60 if args[:2] == ["verify", "mpi"] else 120
    cmd = [exe] + args
    if args == ["verify"]:
        # The replay files of a failure, not shrunk: the first mismatch is
        # the kill.
        cmd += ["--out", os.path.join(d, "out"), "--shrink=false"]
    try:
        r = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=limit)
        return r.returncode != 0, (r.stdout + r.stderr).strip().splitlines()
    except subprocess.TimeoutExpired:
        return True, [f"{' '.join(args)} did not finish in {limit} s"]


class Tree:
    """The tree's verifier, compiled once: every package's archive in the
    build cache (`go list -export -deps`, with the mutants' flags), so a
    mutant's verifier is its own package compiled with the overlay and
    linked with the rest as they are. That is sound when the mutant leaves
    its package's export data as it was (the function bodies are not in
    it, without inlining; a mutant keeps its file's line count so the
    positions stay too): the packages above it would compile to the same
    archives. The linker checks it, each import's fingerprint against the
    export data the importer was compiled with; on a mismatch the mutant is
    built whole with `go build -overlay` instead."""

    def __init__(self, root, go):
        self.root, self.go = root, go
        self.module = subprocess.check_output([go, "list", "-m"], cwd=root, text=True).strip()
        self.link = os.path.join(subprocess.check_output([go, "env", "GOTOOLDIR"], cwd=root, text=True).strip(), "link")
        out = subprocess.check_output([go, "list", "-export", "-deps", GCFLAGS] + TAGS +
                                      ["-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}", VERIFIER], cwd=root, text=True)
        self.archives = dict(l.split("=", 1) for l in out.split())
        self.main = self.module + VERIFIER[1:]

    def fast(self, overlay, path, d, exe):
        """Compiles the mutated package alone and links; returns (how, error):
        how is "fast", or None when the fast way does not apply (a full
        build is needed); error is a compile error (the mutant does not
        build)."""
        pkg = self.module + "/" + os.path.dirname(path)
        if pkg not in self.archives or pkg == self.main:
            return None, ""
        r = subprocess.run([self.go, "list", "-export", "-overlay", overlay, GCFLAGS] + TAGS + ["-f", "{{.Export}}", "./" + os.path.dirname(path)],
                           cwd=self.root, capture_output=True, text=True)
        if r.returncode != 0:
            return None, r.stderr.strip()
        cfg = os.path.join(d, "importcfg.link")
        with open(cfg, "w") as f:
            for p, a in self.archives.items():
                if p != self.main:
                    f.write(f"packagefile {p}={r.stdout.strip() if p == pkg else a}\n")
        l = subprocess.run([self.link, "-o", exe, "-importcfg", cfg, "-buildmode=exe"] + LDFLAGS + [self.archives[self.main]],
                           cwd=d, capture_output=True, text=True)
        return ("fast" if l.returncode == 0 else None), ""

    def full(self, overlay, exe):
        b = subprocess.run([self.go, "build", "-overlay", overlay, GCFLAGS, "-ldflags=" + " ".join(LDFLAGS)] + TAGS + ["-o", exe, VERIFIER],
                           cwd=self.root, capture_output=True, text=True)
        return b.returncode == 0, b.stderr.strip()


def build_and_run(tree, tmp, idx, name, path, old, new, how=None):
    """Builds one mutant's verifier with the mutated file as an overlay (the
    tree itself is never written: the mutated file lives in tmp), then runs
    verify; or, for a mutant with how = ("test", package, regexp), runs
    that package's tests with the overlay."""
    root, go = tree.root, tree.go
    src = open(os.path.join(root, path)).read()
    if src.count(old) != 1:
        return ("STALE", name, f"the original text is not in {path} exactly once", 0.0, 0.0, "")
    d = os.path.join(tmp, str(idx))
    os.makedirs(d)
    mutated = os.path.join(d, os.path.basename(path))
    open(mutated, "w").write(src.replace(old, new))
    overlay = os.path.join(d, "overlay.json")
    json.dump({"Replace": {os.path.join(root, path): mutated}}, open(overlay, "w"))
    t0 = time.time()
    if how and how[0] == "test":
        r = subprocess.run([go, "test", "-count=1", "-overlay", overlay, GCFLAGS, "-run", how[2], how[1]],
                           cwd=root, capture_output=True, text=True, timeout=600)
        why = (r.stdout + r.stderr).strip().splitlines()
        if r.returncode != 0 and any("build failed" in l or "setup failed" in l for l in why):
            return ("NOBUILD", name, "\n".join(why[-5:]), 0.0, 0.0, "")
        first = next((l.strip() for l in why if l.strip().startswith("--- FAIL") or "panic:" in l), why[0] if why else "")
        return ("KILLED" if r.returncode != 0 else "SURVIVED", name, f"go test {how[1]}: {first[:200]}", time.time() - t0, 0.0, "test")
    exe = os.path.join(d, "aaemu")
    built, err = tree.fast(overlay, path, d, exe)
    if err:
        return ("NOBUILD", name, err, 0.0, 0.0, "")
    if not built:
        ok, err = tree.full(overlay, exe)
        if not ok:
            return ("NOBUILD", name, err, 0.0, 0.0, "")
        built = "full"
    secs = time.time() - t0
    t0 = time.time()
    # The message layers: verify mpi alone (the MPI core's delivery
    # against its golden model; `aaemu verify` runs no MPI), stopping at
    # the first run that breaks a rule. The CPU: both.
    runs = ([] if path.startswith("msg/") else [["verify"]]) + ([["verify", "mpi", "--fail-fast"]] if path.startswith(("msg/", "cpu/")) else [])
    for args in runs:
        dead, why = run_verify(exe, d, args)
        if dead:
            first = next((l for l in why if "MISMATCH" in l or "panic:" in l or "aaemu:" in l or "fabric" in l and "seed" in l),
                         why[-1] if why else "")
            return ("KILLED", name, f"aaemu {' '.join(args)}: {first[:200]}", time.time() - t0, secs, built)
    return ("SURVIVED", name, "", time.time() - t0, secs, built)


def baseline(root, go, tmp):
    """Builds the verifier of the tree as it is (filling the build cache
    with every package compiled with the mutants' flags) and checks that it
    passes: a mutant's kill means something only if the tree itself
    passes. Returns the tree's archives for the mutants' links."""
    exe = os.path.join(tmp, "aaemu")
    b = subprocess.run([go, "build", GCFLAGS, "-ldflags=" + " ".join(LDFLAGS)] + TAGS + ["-o", exe, VERIFIER], cwd=root, capture_output=True, text=True)
    if b.returncode != 0:
        sys.exit(f"the verifier does not build:\n{b.stderr}")
    for args in (["verify"], ["verify", "mpi"]):
        dead, why = run_verify(exe, tmp, args)
        if dead:
            sys.exit(f"aaemu {' '.join(args)} fails on the tree itself:\n" + "\n".join(why[-10:]))
    return Tree(root, go)


def check(root):
    """--check: every mutant's original text is in its file exactly once
    (a mutant gone stale with the code it breaks) and the mutant keeps the
    file's line count (so that the fast build applies), without building."""
    bad = 0
    for name, path, old, new, *_ in MUTANTS:
        n = open(os.path.join(root, path)).read().count(old)
        if n != 1:
            bad += 1
            print(f"STALE     {name}: the original text is in {path} {n} times, want once")
        elif old.count("\n") != new.count("\n"):
            bad += 1
            print(f"LINES     {name}: {old.count(chr(10))} line breaks become {new.count(chr(10))} (keep them: the export data holds positions)")
    print(f"{len(MUTANTS) - bad} of {len(MUTANTS)} mutants apply")
    sys.exit(1 if bad else 0)


def main():
    root = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
    if sys.argv[1:] == ["--check"]:
        check(root)
    go = os.environ.get("GO", "go")
    jobs = int(os.environ.get("JOBS", str(os.cpu_count() or 2)))
    start = time.time()
    cpu0 = os.times()
    with tempfile.TemporaryDirectory(prefix="aaemu-mutants-") as tmp:
        tree = baseline(root, go, tmp)
        print(f"the tree itself passes `aaemu verify` and `aaemu verify mpi` ({time.time()-start:.0f}s to build and run)", flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            # Arguments keep only the mutants whose names contain one of them.
            chosen = [m for m in MUTANTS if len(sys.argv) < 2 or any(a in m[0] for a in sys.argv[1:])]
            # The longest first (the message layers' builds and verify mpi
            # runs, then the test binaries), so that two jobs end
            # together; printed in the list's order.
            def cost(i):
                m = chosen[i]
                return 0 if m[1].startswith("msg/") else 1 if len(m) > 4 else 2
            futs = [None] * len(chosen)
            for i in sorted(range(len(chosen)), key=cost):
                futs[i] = pool.submit(build_and_run, tree, tmp, i, *chosen[i])
            killed = run = 0
            stale = []
            building = 0.0
            ways = {}
            for f in futs:  # in the list's order, whatever order they finish in
                fate, name, why, secs, built, way = f.result()
                building += built
                if fate in ("STALE", "NOBUILD"):
                    stale.append(name)
                    print(f"{fate:9} {name}\n          {why}", flush=True)
                    continue
                run += 1
                killed += fate == "KILLED"
                ways[way] = ways.get(way, 0) + 1
                label = "test" if way == "test" else f"{way} build {built:.1f}s, run {secs:.1f}s"
                print(f"{fate:9} {name} ({label})" + (f"\n          {why}" if why else ""), flush=True)
    cpu = os.times()
    used = (cpu.children_user - cpu0.children_user) + (cpu.children_system - cpu0.children_system)
    print(f"\n{killed} of {run} mutants killed (100 % wanted: {100*killed/max(run,1):.0f} %) in {time.time()-start:.0f}s"
          f" ({used:.0f}s of CPU; builds {', '.join(f'{n} {w}' for w, n in sorted(ways.items()))}; {building:.0f}s of builds across {jobs} jobs;"
          f" load average {os.getloadavg()[0]:.1f} at the end)"
          + (f"; {len(stale)} stale" if stale else ""))
    sys.exit(0 if killed == run and not stale else 1)


main()
