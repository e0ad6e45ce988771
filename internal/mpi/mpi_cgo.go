//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>

// Open MPI's handles are macros over addresses of its globals: cgo reaches
// them through functions.
static int aaemu_init(int *provided) { return MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided); }
static int aaemu_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int aaemu_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int aaemu_alltoall_u64(unsigned long long *send, unsigned long long *recv, int k) {
	return MPI_Alltoall(send, k, MPI_UNSIGNED_LONG_LONG, recv, k, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
}
static int aaemu_alltoallv(void *send, int *scounts, int *sdispls, void *recv, int *rcounts, int *rdispls) {
	return MPI_Alltoallv(send, scounts, sdispls, MPI_BYTE, recv, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
}
static int aaemu_allreduce_min(unsigned long long *v, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
}
static int aaemu_allgather_counts(int n, int *counts) {
	return MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
}
static int aaemu_allgatherv(void *send, int n, void *recv, int *counts, int *displs) {
	return MPI_Allgatherv(send, n, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
}
static int aaemu_finalize(void) { return MPI_Finalize(); }
static int aaemu_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// Built reports whether this aaemu was built with MPI (the mpi tag).
const Built = true

// World is MPI_COMM_WORLD as a sim.Comm. MPI is initialised FUNNELED:
// every call is made by one goroutine locked to its OS thread (serve),
// whichever goroutine asks. (The main goroutine cannot be that one: a
// locked goroutine's coroutines, the simulated processes, could then not
// be resumed by the kernel's other goroutines.)
type World struct {
	rank, size int
	tid        int
	calls      chan func()
	done       chan struct{}
}

// Init joins the MPI job the process was started in: nil when no launcher
// started it (a plain run, no MPI at all).
func Init() (*World, error) {
	if _, _, ok := Launched(); !ok {
		return nil, nil
	}
	w := &World{calls: make(chan func()), done: make(chan struct{})}
	errc := make(chan error)
	go w.serve(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return w, nil
}

// serve initialises MPI on its own locked thread and makes every call.
func (w *World) serve(errc chan<- error) {
	runtime.LockOSThread()
	var provided C.int
	if rc := C.aaemu_init(&provided); rc != C.MPI_SUCCESS {
		errc <- fmt.Errorf("MPI_Init_thread failed (%d)", int(rc))
		return
	}
	if provided < C.MPI_THREAD_FUNNELED {
		errc <- fmt.Errorf("MPI gives no thread support (FUNNELED needed)")
		return
	}
	w.tid = syscall.Gettid()
	var r, s C.int
	w.check("MPI_Comm_rank", C.aaemu_rank(&r))
	w.check("MPI_Comm_size", C.aaemu_size(&s))
	w.rank, w.size = int(r), int(s)
	errc <- nil
	for f := range w.calls {
		f()
		w.done <- struct{}{}
	}
}

// do runs f on the MPI thread and waits for it.
func (w *World) do(f func()) {
	w.calls <- f
	<-w.done
}

// check aborts the job on an MPI error (MPI's default handler already has)
// and on a call from another thread than Init's.
func (w *World) check(what string, rc C.int) {
	if rc != C.MPI_SUCCESS {
		fmt.Fprintf(os.Stderr, "aaemu: rank %d: %s failed (%d)\n", w.rank, what, int(rc))
		C.aaemu_abort(2)
	}
}

func (w *World) thread(what string) {
	if syscall.Gettid() != w.tid {
		panic(fmt.Sprintf("mpi: %s from another thread than MPI_Init_thread's (FUNNELED)", what))
	}
}

func (w *World) Rank() int { return w.rank }
func (w *World) Size() int { return w.size }

// buf is a C-callable pointer to b's bytes (a byte of its own when empty).
func buf(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		b = []byte{0}
	}
	return unsafe.Pointer(&b[0])
}

// Exchange is one MPI_Alltoall of each destination's byte count with the
// values to reduce (every rank sends its values to every rank, which takes
// the minimum itself), then, only when some rank has bytes to send, one
// MPI_Alltoallv of the bytes: a window with nothing to exchange costs one
// collective.
func (w *World) Exchange(send [][]byte, red []uint64) (out [][]byte) {
	w.do(func() { out = w.exchange(send, red) })
	return out
}

func (w *World) exchange(send [][]byte, red []uint64) [][]byte {
	w.thread("Exchange")
	n := w.size
	k := 2 + len(red) // count, anything sent by the rank, the values
	head := make([]uint64, n*k)
	any := uint64(0)
	for _, b := range send {
		if len(b) > 0 {
			any = 1
		}
	}
	for r := 0; r < n; r++ {
		h := head[r*k : (r+1)*k]
		h[0], h[1] = uint64(len(send[r])), any
		copy(h[2:], red)
	}
	got := make([]uint64, n*k)
	w.check("MPI_Alltoall", C.aaemu_alltoall_u64((*C.ulonglong)(unsafe.Pointer(&head[0])), (*C.ulonglong)(unsafe.Pointer(&got[0])), C.int(k)))
	out := make([][]byte, n)
	anyone := false
	for r := 0; r < n; r++ {
		h := got[r*k : (r+1)*k]
		anyone = anyone || h[1] != 0
		for i := range red {
			red[i] = min(red[i], h[2+i])
		}
	}
	if !anyone {
		return out
	}
	sc, rc := make([]C.int, n), make([]C.int, n)
	sd, rd := make([]C.int, n), make([]C.int, n)
	total := 0
	for r, b := range send {
		sc[r], sd[r] = C.int(len(b)), C.int(total)
		total += len(b)
	}
	flat := make([]byte, 0, total)
	for _, b := range send {
		flat = append(flat, b...)
	}
	rtotal := 0
	for r := 0; r < n; r++ {
		rc[r], rd[r] = C.int(got[r*k]), C.int(rtotal)
		rtotal += int(rc[r])
	}
	recv := make([]byte, rtotal)
	w.check("MPI_Alltoallv", C.aaemu_alltoallv(buf(flat), &sc[0], &sd[0], buf(recv), &rc[0], &rd[0]))
	for r := range out {
		out[r] = recv[rd[r] : rd[r]+rc[r] : rd[r]+rc[r]]
	}
	return out
}

// AllreduceMin is MPI_Allreduce with MPI_MIN, in place.
func (w *World) AllreduceMin(v []uint64) { w.do(func() { w.allreduceMin(v) }) }

func (w *World) allreduceMin(v []uint64) {
	w.thread("AllreduceMin")
	if len(v) == 0 {
		return
	}
	w.check("MPI_Allreduce", C.aaemu_allreduce_min((*C.ulonglong)(unsafe.Pointer(&v[0])), C.int(len(v))))
}

// Allgather exchanges sizes, then bytes (MPI_Allgather, MPI_Allgatherv).
func (w *World) Allgather(b []byte) (out [][]byte) {
	w.do(func() { out = w.allgather(b) })
	return out
}

func (w *World) allgather(b []byte) [][]byte {
	w.thread("Allgather")
	n := w.size
	counts, displs := make([]C.int, n), make([]C.int, n)
	w.check("MPI_Allgather", C.aaemu_allgather_counts(C.int(len(b)), &counts[0]))
	total := 0
	for r := range counts {
		displs[r] = C.int(total)
		total += int(counts[r])
	}
	recv := make([]byte, total)
	w.check("MPI_Allgatherv", C.aaemu_allgatherv(buf(b), C.int(len(b)), buf(recv), &counts[0], &displs[0]))
	out := make([][]byte, n)
	for r := range out {
		out[r] = recv[displs[r] : displs[r]+counts[r] : displs[r]+counts[r]]
	}
	return out
}

// Finalize ends MPI (MPI_Finalize).
func (w *World) Finalize() {
	w.do(func() { C.aaemu_finalize() })
	close(w.calls)
}

// Abort ends every rank of the job with code (MPI_Abort).
func (w *World) Abort(code int) {
	w.do(func() { C.aaemu_abort(C.int(code)) })
}
