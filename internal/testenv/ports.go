package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
)

// ephemeralRange returns the kernel's range for the local ports of
// outgoing connections (Linux: /proc/sys/net/ipv4/ip_local_port_range;
// elsewhere the widest common one, 32768-65535).
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 65535
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var l, h int
	if n, _ := fmt.Sscan(string(b), &l, &h); n == 2 && l > 0 && h >= l {
		return l, h
	}
	return lo, hi
}

// FreePortPairs returns n distinct loopback ports p such that p and
// p+offset (a server's second port: SeaweedFS's gRPC port, Redis
// Cluster's bus port) are free, all outside the ephemeral range: a port
// from that range (as "127.0.0.1:0" gives) can be taken by the local end
// of any outgoing connection of this machine's other tests, or of the
// server itself, between the check here and the server's bind. Outside it
// only an explicit bind can take the port (a caller still retries then).
func FreePortPairs(n, offset int) ([]int, error) {
	elo, ehi := ephemeralRange()
	outside := func(p int) bool { return p < elo || p > ehi }
	var cands []int
	for p := 10000; p+offset <= 65535; p++ {
		if outside(p) && outside(p+offset) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("testenv: no port p with p and p+%d outside the ephemeral range %d-%d", offset, elo, ehi)
	}
	free := func(p int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
		return true
	}
	var out []int
	for range 1000 {
		p := cands[rand.IntN(len(cands))]
		if slices.Contains(out, p) || slices.Contains(out, p+offset) || slices.Contains(out, p-offset) || !free(p) || !free(p+offset) {
			continue
		}
		if out = append(out, p); len(out) == n {
			return out, nil
		}
	}
	return nil, fmt.Errorf("testenv: no %d free port pairs among 1000 tries", n)
}
