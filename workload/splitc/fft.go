package splitc

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// FFTConfig is the 3D FFT stand-in: an N³ cube of complex values (16
// bytes each) in slabs of N/P planes, FFTs along x and y in each plane,
// an all-to-all transpose of bulk stores into pencils along z, FFTs along
// z, and the transpose back (seed 000's 3D FFT: 256³ values, Table 4's
// 128 bulk stores of 4 kB per pair of ranks = two transposes of 256 kB).
type FFTConfig struct {
	N     int // the cube's side, a power of two, a multiple of the ranks
	Chunk int // bytes per bulk store (default 4096, Table 4's), a multiple of 16
	// CyclesPerFlop is the compute a floating-point operation of the
	// FFTs costs (an FFT of n points is 5 n log₂ n flops); default 2, an
	// assumption for a 167 MHz UltraSPARC (peak 2 flops a cycle, an FFT
	// rarely a quarter of it), not a figure of the seed.
	CyclesPerFlop int
	Seed          uint64
}

// FFT is one run of the stand-in on P ranks.
type FFT struct {
	cfg   FFTConfig
	p     int
	slabs [][]complex128 // each rank's result, read after the run
}

// Handler of the transposes' bulk stores.
const hFFTData = 1

// NewFFT checks the configuration for p ranks.
func NewFFT(cfg FFTConfig, p int) (*FFT, error) {
	if cfg.Chunk == 0 {
		cfg.Chunk = 4096
	}
	if cfg.CyclesPerFlop == 0 {
		cfg.CyclesPerFlop = 2
	}
	switch {
	case p < 1:
		return nil, fmt.Errorf("fft: %d ranks", p)
	case cfg.N < 2 || cfg.N&(cfg.N-1) != 0 || cfg.N > 1024:
		return nil, fmt.Errorf("fft: n = %d, want a power of two 2..1024", cfg.N)
	case cfg.N%p != 0:
		return nil, fmt.Errorf("fft: n = %d is not a multiple of the %d ranks", cfg.N, p)
	case cfg.Chunk < 16 || cfg.Chunk > MaxBulk || cfg.Chunk%16 != 0:
		return nil, fmt.Errorf("fft: chunk %d bytes, want a multiple of 16 in 16..%d", cfg.Chunk, MaxBulk)
	case cfg.CyclesPerFlop < 0:
		return nil, fmt.Errorf("fft: %d cycles per flop", cfg.CyclesPerFlop)
	}
	return &FFT{cfg: cfg, p: p, slabs: make([][]complex128, p)}, nil
}

// BlockBytes is what a rank sends each other rank in one transpose.
func (f *FFT) BlockBytes() int { q := f.cfg.N / f.p; return q * f.cfg.N * q * 16 }

// BulkPerPair is the bulk stores from one rank to another in a run.
func (f *FFT) BulkPerPair() int { return 2 * ((f.BlockBytes() + f.cfg.Chunk - 1) / f.cfg.Chunk) }

// FFTInput is the initial value at (x, y, z).
func FFTInput(seed uint64, x, y, z int) complex128 {
	h := mix(seed ^ uint64(x)<<40 ^ uint64(y)<<20 ^ uint64(z))
	re := float64(h>>40)/float64(1<<24)*2 - 1
	im := float64(h&0xffffff)/float64(1<<24)*2 - 1
	return complex(re, im)
}

// mix is SplitMix64's finaliser: a deterministic hash.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Program is what every rank runs.
func (f *FFT) Program() Program {
	return func(r Rank) error {
		n, p, id := f.cfg.N, f.p, r.ID()
		q := n / p
		slab := q * n * n
		block := uint64(f.BlockBytes())
		a := r.Alloc(uint64(slab) * 16) // planes [zl][y][x], later pencils [xl][y][z]
		send := r.Alloc(uint64(slab) * 16)
		// A receive buffer per transpose: a rank may store into the
		// second while this one still reads the first.
		recv := [2]uint64{r.Alloc(uint64(slab) * 16), r.Alloc(uint64(slab) * 16)}
		buf := make([]complex128, slab)
		raw := make([]byte, 16*slab) // the bytes of every load and store
		for zl := 0; zl < q; zl++ {
			for y := 0; y < n; y++ {
				for x := 0; x < n; x++ {
					buf[(zl*n+y)*n+x] = FFTInput(f.cfg.Seed, x, y, id*q+zl)
				}
			}
		}
		r.Poke(a, encode(buf, raw)) // the input, in memory before the run
		if err := r.Handle(hFFTData, func(m *Msg) {
			r.Copy(recv[m.Args[1]]+uint64(m.From)*block+uint64(m.Args[0]), m.Data, uint64(m.Len))
		}); err != nil {
			return err
		}
		if _, err := r.Sync(Sum, zero); err != nil {
			return err
		}
		flops := func(rows, length int) int {
			return rows * 5 * length * bits.Len(uint(length-1)) * f.cfg.CyclesPerFlop
		}
		// FFTs along x, then y, in each plane.
		load(r, a, buf, raw)
		col := make([]complex128, n)
		for zl := 0; zl < q; zl++ {
			for y := 0; y < n; y++ {
				fft1(buf[(zl*n+y)*n : (zl*n+y+1)*n])
			}
			for x := 0; x < n; x++ {
				for y := 0; y < n; y++ {
					col[y] = buf[(zl*n+y)*n+x]
				}
				fft1(col)
				for y := 0; y < n; y++ {
					buf[(zl*n+y)*n+x] = col[y]
				}
			}
		}
		r.Compute(flops(2*q*n, n))
		store(r, a, buf, raw)
		// Transpose: to each rank d, the values of its x range as
		// [zl][y][xl]; then pencils [xl][y][z] with FFTs along z.
		if err := f.transpose(r, 0, a, send, recv[0], block); err != nil {
			return err
		}
		in := make([]complex128, slab)
		load(r, recv[0], in, raw)
		for s := 0; s < p; s++ {
			for zl := 0; zl < q; zl++ {
				for y := 0; y < n; y++ {
					for xl := 0; xl < q; xl++ {
						buf[(xl*n+y)*n+s*q+zl] = in[s*q*n*q+(zl*n+y)*q+xl]
					}
				}
			}
		}
		for row := 0; row < q*n; row++ {
			fft1(buf[row*n : (row+1)*n])
		}
		r.Compute(flops(q*n, n))
		store(r, a, buf, raw)
		// And back: to each rank d its z range as [xl][y][zl], into planes.
		if err := f.transpose(r, 1, a, send, recv[1], block); err != nil {
			return err
		}
		load(r, recv[1], in, raw)
		for s := 0; s < p; s++ {
			for xl := 0; xl < q; xl++ {
				for y := 0; y < n; y++ {
					for zl := 0; zl < q; zl++ {
						buf[(zl*n+y)*n+s*q+xl] = in[s*q*n*q+(xl*n+y)*q+zl]
					}
				}
			}
		}
		store(r, a, buf, raw)
		if _, err := r.Sync(Sum, zero); err != nil {
			return err
		}
		r.Peek(a, raw)
		f.slabs[id] = decode(raw, in)
		return nil
	}
}

// transpose packs the local array (rows of n values, q of them to each
// rank) into per-rank blocks, stores each other rank's in chunks (its own
// copied), staggered so that rank i sends to i+1 first, and waits for all.
func (f *FFT) transpose(r Rank, t uint32, a, send, recv, block uint64) error {
	n, p, id := f.cfg.N, f.p, r.ID()
	q := n / p
	seg := uint64(q * 16)
	for d := 0; d < p; d++ {
		for row := 0; row < q*n; row++ {
			r.Copy(send+uint64(d)*block+uint64(row)*seg, a+uint64(row*n+d*q)*16, seg)
		}
	}
	for k := 1; k <= p; k++ {
		d := (id + k) % p
		if d == id {
			r.Copy(recv+uint64(id)*block, send+uint64(id)*block, block)
			continue
		}
		for off := uint64(0); off < block; off += uint64(f.cfg.Chunk) {
			if err := r.StoreBulk(d, hFFTData, send+uint64(d)*block+off, int(min(uint64(f.cfg.Chunk), block-off)), uint32(off), t); err != nil {
				return err
			}
		}
	}
	_, err := r.Sync(Sum, zero)
	return err
}

func zero() uint64 { return 0 }

// Check compares the ranks' result with a serial 3D FFT of the same cube
// (the same 1D transforms in the same order: equal to the bit).
func (f *FFT) Check() error {
	n, q := f.cfg.N, f.cfg.N/f.p
	cube := make([]complex128, n*n*n)
	for z := 0; z < n; z++ {
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				cube[(z*n+y)*n+x] = FFTInput(f.cfg.Seed, x, y, z)
			}
		}
	}
	line := make([]complex128, n)
	for dim := 0; dim < 3; dim++ {
		stride := []int{1, n, n * n}[dim]
		for i := 0; i < n*n; i++ {
			// the start of the i-th line along dim
			var base int
			switch dim {
			case 0:
				base = i * n
			case 1:
				base = (i/n)*n*n + i%n
			case 2:
				base = i
			}
			for k := 0; k < n; k++ {
				line[k] = cube[base+k*stride]
			}
			fft1(line)
			for k := 0; k < n; k++ {
				cube[base+k*stride] = line[k]
			}
		}
	}
	for id, s := range f.slabs {
		if s == nil {
			return fmt.Errorf("fft: rank %d has no result", id)
		}
		for i, v := range s {
			if w := cube[id*q*n*n+i]; v != w {
				zl, y, x := i/(n*n), i/n%n, i%n
				return fmt.Errorf("fft: rank %d: value at (x %d, y %d, z %d) is %v, the serial FFT's %v", id, x, y, id*q+zl, v, w)
			}
		}
	}
	return nil
}

// fft1 is an in-place radix-2 FFT.
func fft1(a []complex128) {
	n := len(a)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		step := -2 * math.Pi / float64(size)
		for k := 0; k < size/2; k++ {
			w := complex(math.Cos(step*float64(k)), math.Sin(step*float64(k)))
			for i := k; i < n; i += size {
				u, v := a[i], w*a[i+size/2]
				a[i], a[i+size/2] = u+v, u-v
			}
		}
	}
}

// load reads len(dst) values at addr (costed: every line) through raw.
func load(r Rank, addr uint64, dst []complex128, raw []byte) {
	r.Read(addr, raw[:16*len(dst)])
	decode(raw, dst)
}

// store writes the values at addr (costed) through raw.
func store(r Rank, addr uint64, src []complex128, raw []byte) { r.Write(addr, encode(src, raw)) }

// encode puts src into b's first 16 len(src) bytes and returns them.
func encode(src []complex128, b []byte) []byte {
	b = b[:16*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint64(b[16*i:], math.Float64bits(real(v)))
		binary.LittleEndian.PutUint64(b[16*i+8:], math.Float64bits(imag(v)))
	}
	return b
}

// decode fills dst from b and returns it.
func decode(b []byte, dst []complex128) []complex128 {
	for i := range dst {
		dst[i] = complex(math.Float64frombits(binary.LittleEndian.Uint64(b[16*i:])), math.Float64frombits(binary.LittleEndian.Uint64(b[16*i+8:])))
	}
	return dst
}
