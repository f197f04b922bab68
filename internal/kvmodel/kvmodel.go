// Package kvmodel is the linearizability model the consensus tests check client
// histories against with porcupine: a map of registers, one per key, where a put sets the
// value and a get must return the current one ("" for a key never set). Histories are
// partitioned by key, which keeps the check fast.
package kvmodel

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Input is one client call: a put of Val, or a get (whose Output is the value read).
type Input struct {
	Put      bool
	Key, Val string
}

// Put and Get build inputs.
func Put(key, val string) Input { return Input{Put: true, Key: key, Val: val} }

// Get is a read of key.
func Get(key string) Input { return Input{Key: key} }

// Model is the porcupine model of a key-value store of registers.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if by[k] == nil {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(Input)
		if in.Put {
			return true, in.Val
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(Input)
		if in.Put {
			return fmt.Sprintf("put(%s, %s)", in.Key, in.Val)
		}
		return fmt.Sprintf("get(%s) → %q", in.Key, output)
	},
}
