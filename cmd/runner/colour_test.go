package main

import (
	"bytes"
	"strings"
	"testing"
)

// terminalBuffer is a buffer that says it is a terminal.
type terminalBuffer struct{ bytes.Buffer }

func (*terminalBuffer) Terminal() bool { return true }

// On a terminal the outcome words are coloured, written in any pieces;
// with NO_COLOR set, or on anything but a terminal, nothing is.
func TestColouredOutcomes(t *testing.T) {
	text := "rules\n  PASS         p99 < 20ms\n  FAIL         errors == 0\n  PASSWORD is not a status\n\nverdict: INCONCLUSIVE (every rule holds, but …)\nverdict: FA"
	write := func(w interface{ Write([]byte) (int, error) }) {
		for _, piece := range strings.SplitAfter(text, " ") { // a line in pieces
			w.Write([]byte(piece))
		}
	}
	t.Setenv("NO_COLOR", "")
	term := &terminalBuffer{}
	w, flush := coloured(term)
	write(w)
	flush()
	got := term.String()
	for _, want := range []string{"  \x1b[32mPASS\x1b[0m         p99", "  \x1b[31mFAIL\x1b[0m         errors", "verdict: \x1b[33mINCONCLUSIVE\x1b[0m (every", "verdict: FA"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
	if strings.Contains(got, "\x1b[32mPASSWORD") {
		t.Error("a word that only begins like a status was coloured")
	}
	if strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(got, "\x1b[32m", ""), "\x1b[31m", ""), "\x1b[33m", ""), "\x1b[0m", "") != text {
		t.Errorf("colour changed the text: %q", got)
	}

	t.Setenv("NO_COLOR", "1")
	term = &terminalBuffer{}
	w, flush = coloured(term)
	write(w)
	flush()
	if term.String() != text {
		t.Errorf("NO_COLOR: %q", term.String())
	}
	t.Setenv("NO_COLOR", "")
	var plain bytes.Buffer
	w, flush = coloured(&plain)
	write(w)
	flush()
	if plain.String() != text {
		t.Errorf("not a terminal: %q", plain.String())
	}
}
