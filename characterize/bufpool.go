package characterize

import (
	"math/bits"
	"sync"
)

// bufPool recycles payload buffers by power-of-two capacity, so reading
// records does not allocate (and collect) a buffer per payload.
type bufPool struct {
	classes [40]sync.Pool // class c holds *[]byte of capacity 1<<c
}

const minBufClass = 12 // 4 KiB

func bufClass(n int) int {
	if n <= 1<<minBufClass {
		return minBufClass
	}
	return bits.Len(uint(n - 1))
}

// get returns an empty buffer with capacity of at least n.
func (p *bufPool) get(n int) []byte {
	c := bufClass(n)
	if c >= len(p.classes) {
		return make([]byte, 0, n)
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<c)
}

// put recycles b; nothing may use it afterwards.
func (p *bufPool) put(b []byte) {
	c := bits.Len(uint(cap(b))) - 1
	if c < minBufClass || c >= len(p.classes) || cap(b) != 1<<c {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}
