package kvmodel

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The model accepts a history a register allows and refuses a stale read.
func TestModel(t *testing.T) {
	ok := []porcupine.Operation{
		{Input: Put("a", "1"), Call: 0, Return: 10},
		{Input: Get("a"), Output: "1", Call: 20, Return: 30},
		{Input: Get("b"), Output: "", Call: 20, Return: 30},
		{Input: Put("a", "2"), Call: 25, Return: 1 << 62}, // unknown outcome
		{Input: Get("a"), Output: "1", Call: 40, Return: 50},
	}
	if !porcupine.CheckOperations(Model, ok) {
		t.Fatal("a legal history was refused")
	}
	stale := []porcupine.Operation{
		{Input: Put("a", "1"), Call: 0, Return: 10},
		{Input: Put("a", "2"), Call: 20, Return: 30},
		{Input: Get("a"), Output: "1", Call: 40, Return: 50},
	}
	if porcupine.CheckOperations(Model, stale) {
		t.Fatal("a stale read was accepted")
	}
}
