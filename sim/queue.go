package sim

// Queue is a FIFO of T on a ring that grows by doubling and never shrinks:
// a block's internal queue (requests waiting out a latency, completions
// waiting for room) costs no allocation once it has reached its high-water
// mark, unlike a slice re-sliced from the front.
type Queue[T any] struct {
	buf        []T
	head, size int
}

// Len is the number of queued items.
func (q *Queue[T]) Len() int { return q.size }

// Push appends v at the back.
func (q *Queue[T]) Push(v T) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = v
	q.size++
}

// Front returns the oldest item in place; the queue must not be empty.
func (q *Queue[T]) Front() *T {
	if q.size == 0 {
		panic("sim.Queue: Front of an empty queue")
	}
	return &q.buf[q.head]
}

// Pop removes and returns the oldest item; the queue must not be empty.
func (q *Queue[T]) Pop() T {
	v := *q.Front()
	var zero T
	q.buf[q.head] = zero // drop references for the collector
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return v
}

// At returns the i-th oldest item in place (0 is the front).
func (q *Queue[T]) At(i int) *T {
	if i < 0 || i >= q.size {
		panic("sim.Queue: index out of range")
	}
	return &q.buf[(q.head+i)&(len(q.buf)-1)]
}

// grow doubles the ring (a power of two, so positions wrap with a mask),
// unrolling it so the front is at 0.
func (q *Queue[T]) grow() {
	n := max(8, 2*len(q.buf))
	buf := make([]T, n)
	k := copy(buf, q.buf[q.head:])
	copy(buf[k:], q.buf[:q.head])
	q.buf, q.head = buf, 0
}
