package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
)

// The forms of a listing's -o.
const (
	outText = "text" // a table, for people
	outWide = "wide" // the table with every column
	outJSON = "json" // one JSON object a line, for jq and scripts
)

// outputFlags are a listing's -o and its older spelling --json.
type outputFlags struct {
	o    *string
	json *bool
}

func newOutputFlags(fs *flag.FlagSet) *outputFlags {
	return &outputFlags{
		o:    fs.String("o", outText, "output `form`: text (a table), wide (every column) or json (one object a line)"),
		json: fs.Bool("json", false, "the same as -o json"),
	}
}

// form is the output asked for; an unknown one is a usage error.
func (f *outputFlags) form() (string, error) {
	if *f.json {
		return outJSON, nil
	}
	switch *f.o {
	case outText, outWide, outJSON:
		return *f.o, nil
	}
	return "", fmt.Errorf("-o %q: want text, wide or json", *f.o)
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
