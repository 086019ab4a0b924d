package measure

import (
	"errors"
	"math/big"
	"math/bits"
)

// sum128 is an unsigned 128-bit accumulator for exact sums of nanoseconds
// and of squared nanoseconds: Σx² overflows 64 bits after one sample of
// about 4.3 s, and 128 bits hold 10^13 squared hours.
type sum128 struct{ hi, lo uint64 }

// add adds x.
func (s *sum128) add(x uint64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, x, 0)
	s.hi += c
}

// addSquare adds x².
func (s *sum128) addSquare(x uint64) {
	hi, lo := bits.Mul64(x, x)
	var c uint64
	s.lo, c = bits.Add64(s.lo, lo, 0)
	s.hi, _ = bits.Add64(s.hi, hi, c)
}

// addProduct adds x·n; a product beyond 128 bits wraps (it cannot occur
// for the sums kept here: hours squared times 2^63 samples fit).
func (s *sum128) addProduct(x sum128, n uint64) {
	h1, l1 := bits.Mul64(x.lo, n)
	s.addSum(sum128{hi: h1 + x.hi*n, lo: l1})
}

// addSum adds another accumulator.
func (s *sum128) addSum(o sum128) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, o.lo, 0)
	s.hi, _ = bits.Add64(s.hi, o.hi, c)
}

// big returns the value as a big.Int.
func (s sum128) big() *big.Int {
	b := new(big.Int).SetUint64(s.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(s.lo))
}

var errSumRange = errors.New("sum out of range: must be in [0, 2^128)")

// sumFromBig is the inverse of big.
func sumFromBig(b *big.Int) (sum128, error) {
	if b == nil {
		return sum128{}, nil
	}
	if b.Sign() < 0 || b.BitLen() > 128 {
		return sum128{}, errSumRange
	}
	lo := new(big.Int).And(b, new(big.Int).SetUint64(^uint64(0)))
	hi := new(big.Int).Rsh(b, 64)
	return sum128{hi: hi.Uint64(), lo: lo.Uint64()}, nil
}
