#!/usr/bin/env python3
"""Mutation testing of `aaemu verify`: each mutant is one broken rule applied
as a source patch to a temporary copy of the tree (the real tree is never
touched); `aaemu verify` with its default seed counts runs against it, and a
mutant is killed when verify fails. Prints each mutant's fate and the kill
rate; exits non-zero if a non-equivalent mutant survives.

Equivalent mutants (argued, so not in the list): making the up link's
transmit queue deeper (QueueTLPs) changes timing only, never a rule; a
completer splitting at 128 B where the link's RCB is 64 B obeys the rule
(128-byte boundaries are 64-byte boundaries too)."""
import os, shutil, subprocess, sys, tempfile, time

# (name, file, original text, mutated text)
MUTANTS = [
    ("pcie: credits returned at once, not after the UpdateFC latency",
     "pcie/dir.go", "at := d.u.Engine().Now() + d.spec.UpdateFCLatency", "at := d.u.Engine().Now()"),
    ("pcie: credits returned when a TLP arrives, not when the receiver frees it",
     "pcie/dir.go", "\t\td.Out.SendLane(int(c), f.p)\n", "\t\td.Out.SendLane(int(c), f.p)\n\t\td.release(&f.p)\n"),
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
     "nic/qp.go", "\t\tp.PSN = q.nextPSN\n\t\tq.nextPSN = (q.nextPSN + 1) & 0xffffff", "\t\tp.PSN = q.nextPSN\n\t\tif p.Opcode != roce.WriteMiddle {\n\t\t\tq.nextPSN = (q.nextPSN + 1) & 0xffffff\n\t\t}"),
    ("nic: a duplicate write executed again",
     "nic/qp.go", "\t\tn.stDupes.Inc()\n\t\tq.duplicate(f)", "\t\tn.stDupes.Inc()\n\t\tif len(p.Payload) > 0 && p.Opcode == roce.WriteOnly {\n\t\t\tn.dmaWrite(p.RETH.VA, p.Payload, f.ID)\n\t\t}\n\t\tq.duplicate(f)"),
    ("nic: an ACK before the request is received (ACK of the next PSN)",
     "nic/qp.go", "\t\tif p.AckReq {\n\t\t\tq.ack(p.PSN, roce.SyndromeAck, f.ID)\n\t\t}\n\tcase roce.SendFirst", "\t\tif p.AckReq {\n\t\t\tq.ack((p.PSN+1)&0xffffff, roce.SyndromeAck, f.ID)\n\t\t}\n\tcase roce.SendFirst"),
    ("memory: a read performed before an earlier write",
     "memory/controller.go", "if rd && (!w || c.pending[1].Front().seq < c.pending[0].Front().seq) {", "if rd {"),
    ("memory: a write's last byte dropped",
     "memory/controller.go", "\t\tc.Store.Write(r.Addr, r.Data)", "\t\tc.Store.Write(r.Addr, r.Data[:max(len(r.Data)-1, 0)])"),
    ("iommu: a PAD record that takes no sequence number",
     "iommu/accesslog.go", "\t\tm.writeHeader(ls.base+pos, &h, nil)\n\t\tls.seq++", "\t\tm.writeHeader(ls.base+pos, &h, nil)"),
]

def main():
    root = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
    files = subprocess.check_output(["git", "ls-files", "-z"], cwd=root).decode().split("\0")
    go = os.environ.get("GO", "go")
    killed, run, stale = 0, 0, []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="aaemu-mutants-") as tmp:
        for f in files:
            if f and os.path.isfile(os.path.join(root, f)):
                os.makedirs(os.path.join(tmp, os.path.dirname(f)), exist_ok=True)
                shutil.copy2(os.path.join(root, f), os.path.join(tmp, f))
        for name, path, old, new in MUTANTS:
            p = os.path.join(tmp, path)
            src = open(p).read()
            if src.count(old) != 1:
                stale.append(name)
                print(flush=True, *[f"STALE     {name}: the original text is not in {path} exactly once"])
                continue
            open(p, "w").write(src.replace(old, new))
            try:
                b = subprocess.run([go, "build", "-o", "mutant-aaemu", "./cmd/aaemu"], cwd=tmp, capture_output=True, text=True)
                if b.returncode != 0:
                    print(f"NOBUILD   {name}\n{b.stderr}")
                    stale.append(name)
                    continue
                run += 1
                t0 = time.time()
                try:
                    r = subprocess.run(["./mutant-aaemu", "verify", "--out", os.path.join(tmp, "out")], cwd=tmp, capture_output=True, text=True, timeout=120)
                    dead, why = r.returncode != 0, (r.stdout + r.stderr).strip().splitlines()
                except subprocess.TimeoutExpired:
                    dead, why = True, ["verify did not finish in 120 s"]
                killed += dead
                first = next((l for l in why if "MISMATCH" in l or "aaemu:" in l), why[-1] if why else "")
                print(f"{'KILLED' if dead else 'SURVIVED':9} {name} ({time.time()-t0:.1f}s)" + (f"\n          {first[:220]}" if dead else ""), flush=True)
            finally:
                open(p, "w").write(src)
    print(f"\n{killed} of {run} mutants killed by `aaemu verify` ({100*killed/max(run,1):.0f} %) in {time.time()-start:.0f}s" + (f"; {len(stale)} stale" if stale else ""))
    sys.exit(0 if killed == run and not stale else 1)

main()
