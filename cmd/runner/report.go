package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/reports"
)

// renderers are the formats `runner report` (and the run's outputs)
// write a Run in.
var renderers = map[string]func(io.Writer, *reports.Run) error{
	"console": func(w io.Writer, r *reports.Run) error { reports.Console(w, r, true); return nil },
	"tsv":     writeTSV,
	"hdr":     reports.HDRLog,
	"md":      reports.Markdown,
	"junit":   reports.JUnit,
	"html":    reports.HTML,
}

// formats lists the renderers' names in order.
func formats() []string {
	var names []string
	for k := range renderers {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// writeTSV writes the header and the rows of each (repeat, phase), its
// own and one per flow step (reports.Run.Rows), as the run appended them.
func writeTSV(w io.Writer, r *reports.Run) error {
	var b strings.Builder
	b.WriteString(strings.Join(reports.TSVColumns, "\t") + "\n")
	if r.Result != nil {
		for _, pr := range r.Result.Phases {
			for _, row := range r.Rows(pr) {
				b.WriteString(strings.Join(row, "\t") + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "report RESULT.json [--format FORMAT] [-o FILE]",
		Short: "Render a report again from a saved JSON result, without re-running",
		Long: `report reads a JSON report that runner run wrote (--json or outputs.json)
and renders it again in another format, without sending anything: every
number comes from the saved result (histograms included), so a report made
later says exactly what the run measured. Formats: ` + strings.Join(formats(), ", ") + `.
Writes to standard output, or to -o FILE (atomically). Exit 2 for an
unreadable or foreign file or an unknown format.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			render, ok := renderers[format]
			if !ok {
				fmt.Fprintf(stderr, "runner report: unknown format %q; formats: %s\n", format, strings.Join(formats(), ", "))
				return exitError(exitInvalid)
			}
			r, err := reports.Load(args[0])
			if err != nil {
				fmt.Fprintln(stderr, "runner report:", err)
				return exitError(exitInvalid)
			}
			if out == "" || out == "-" {
				if err := render(stdout, r); err != nil {
					fmt.Fprintln(stderr, "runner report:", err)
					return exitError(exitCouldNotRun)
				}
				return nil
			}
			if err := reports.CheckOutput("-o", out); err != nil {
				fmt.Fprintf(stderr, "runner report: %v\n", err)
				return exitError(exitInvalid)
			}
			if err := writeAtomically(out, func(w io.Writer) error { return render(w, r) }); err != nil {
				fmt.Fprintf(stderr, "runner report: writing %s: %v\n", out, err)
				return exitError(exitCouldNotRun)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "console", "the format: "+strings.Join(formats(), ", "))
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of standard output")
	return cmd
}

// writeAtomically writes path through a temporary file in its directory,
// renamed over it once complete: a reader never sees half a report.
func writeAtomically(path string, write func(io.Writer) error) error {
	// Like the run's own outputs, a missing directory is created.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".runner-report-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
