package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// The forms of a listing's -o.
const (
	outText = "text" // a table, for people
	outWide = "wide" // the table with every column
	outJSON = "json" // one JSON object a line, for jq and scripts
	outCSV  = "csv"  // comma-separated values with a header, for a spreadsheet (audit)
)

// outputFlags are a listing's -o and its older spelling --json.
type outputFlags struct {
	o     *string
	json  *bool
	forms []string
}

// newOutputFlags adds -o and --json to fs: text, wide, json, and the extra forms.
func newOutputFlags(fs *flag.FlagSet, extra ...string) *outputFlags {
	forms := append([]string{outText, outWide, outJSON}, extra...)
	help := "output `form`: text (a table), wide (every column) or json (one object a line)"
	if len(extra) > 0 {
		help = "output `form`: text (a table), wide (every column), json (one object a line) or " + strings.Join(extra, ", ")
	}
	return &outputFlags{o: fs.String("o", outText, help), json: fs.Bool("json", false, "the same as -o json"), forms: forms}
}

// form is the output asked for; an unknown one is a usage error.
func (f *outputFlags) form() (string, error) {
	if *f.json {
		return outJSON, nil
	}
	if slices.Contains(f.forms, *f.o) {
		return *f.o, nil
	}
	last := len(f.forms) - 1
	return "", fmt.Errorf("-o %q: want %s or %s", *f.o, strings.Join(f.forms[:last], ", "), f.forms[last])
}

// table writes rows aligned in columns: the header first, then one line a row. Each
// row has as many cells as the header.
func table(w io.Writer, header []string, rows [][]string) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	if err := tw.Flush(); err != nil {
		return exitError
	}
	return exitOK
}
