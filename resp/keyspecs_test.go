package resp

import (
	"math/rand/v2"
	"testing"

	"github.com/nanokv/nanokv/kvstore"
)

// Every Redis command's key finding takes any argument list without panicking, and
// returns only arguments of the call.
func TestCallKeysTakesAnyArguments(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"0", "1", "2", "-1", "3x", "999999999999", "get", "GET", "set", "incrby", "overflow",
		"store", "STORE", "by", "limit", "streams", "STREAMS", "keys", "storedist", "k", ""}
	spec := &kvstore.Spec{Name: "x", Arity: -1}
	n := 0
	for name := range redisMeta {
		for range 200 {
			args := [][]byte{[]byte(name)}
			for range rng.IntN(9) {
				args = append(args, []byte(words[rng.IntN(len(words))]))
			}
			for _, r := range callKeys(name, spec, args) {
				found := false
				for _, a := range args[1:] {
					found = found || string(a) == string(r.key)
				}
				if !found {
					t.Fatalf("%s %q: key %q is not one of the arguments", name, args, r.key)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no keys found in any call")
	}
	t.Logf("%d keys found", n)
}
