package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
)

// verdictWord finds the outcome words of a console line that colour
// marks: the verdict line's, and a rule's status at the start of its
// line.
var verdictWord = regexp.MustCompile(`^(verdict: |  )(PASS|FAIL|INCONCLUSIVE|COULD NOT RUN|INTERRUPTED|ERROR)\b`)

// ANSI colours of the outcomes: green, red, yellow.
var colours = map[string]string{
	"PASS": "\x1b[32m", "FAIL": "\x1b[31m", "ERROR": "\x1b[31m", "COULD NOT RUN": "\x1b[31m",
	"INCONCLUSIVE": "\x1b[33m", "INTERRUPTED": "\x1b[33m",
}

// colourWriter colours the outcome words of the lines written through it
// (verdictWord); everything else passes as written. It buffers a partial
// line until its newline, and Flush writes what is left.
type colourWriter struct {
	w   io.Writer
	buf []byte
}

// coloured returns w with its outcome words coloured when w is a
// terminal and NO_COLOR (https://no-color.org) is unset or empty; w
// itself otherwise. The returned flush writes a last partial line.
func coloured(w io.Writer) (io.Writer, func()) {
	if os.Getenv("NO_COLOR") != "" || !isTerminal(w) {
		return w, func() {}
	}
	c := &colourWriter{w: w}
	return c, c.Flush
}

// Write implements io.Writer.
func (c *colourWriter) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := c.w.Write(colourLine(c.buf[:i+1])); err != nil {
			return len(p), err
		}
		c.buf = c.buf[i+1:]
	}
}

// Flush writes a partial line left in the buffer.
func (c *colourWriter) Flush() {
	if len(c.buf) > 0 {
		c.w.Write(colourLine(c.buf))
		c.buf = nil
	}
}

// colourLine is line with its outcome word coloured, if it has one.
func colourLine(line []byte) []byte {
	m := verdictWord.FindSubmatchIndex(line)
	if m == nil {
		return line
	}
	word := string(line[m[4]:m[5]])
	var out []byte
	out = append(out, line[:m[4]]...)
	out = append(out, colours[word]...)
	out = append(out, word...)
	out = append(out, "\x1b[0m"...)
	return append(out, line[m[5]:]...)
}
