package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
)

// WriteFleetTable writes the scaling curve as a text table.
func WriteFleetTable(w io.Writer, r *FleetReport) {
	fmt.Fprintf(w, "machine: %d cores %s/%s %s · %d sessions at %g/s, %d progress + %d questions + %d approvals + %d unrouted each, think %.0fms; every node a process, one NATS server\n\n",
		r.Machine.Cores, r.Machine.GOOS, r.Machine.GOARCH, r.Machine.GoVersion, r.Config.Sessions, r.Config.Rate, r.Config.Progress,
		r.Config.Questions, r.Config.Approvals, r.Config.Unrouted, r.Config.ThinkMS)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "agent nodes\tsupervisor nodes\tok\tfailed\twall s\trequests/s\tq p50 ms\tq p99 ms\tq p99.9 ms\tdefault late p99 ms\tpeak sessions\tCPU agents s\tCPU supervisors s\tCPU server s\treq/CPU-s\t")
	for _, p := range r.Points {
		s := p.System
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.2f\t%.0f\t%.3f\t%.3f\t%.3f\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.0f\t\n", p.Agents, p.Supervisors, s.Sessions-s.Failed,
			s.Failed, s.Wall, s.RequestsPS, ms(s.Questions.P50), ms(s.Questions.P99), ms(s.Questions.P999), lateCell(s), s.PeakConcurrent,
			p.AgentCPU, p.SupervisorCPU, p.ServerCPU, s.QPSPerCore)
	}
	_ = tw.Flush()
}

// fleetSeries is one line of the curve: the points where one kind of node varies.
type fleetSeries struct {
	name   string
	points []*FleetPoint
	x      func(*FleetPoint) int
}

// WriteFleetPNG draws the scaling curve: requests/s and question p99 against the number
// of supervisor nodes (one agent node) and of agent nodes (one supervisor node).
func WriteFleetPNG(w io.Writer, r *FleetReport) error {
	series := []fleetSeries{
		{name: "supervisor nodes (1 agent node)", x: func(p *FleetPoint) int { return p.Supervisors }},
		{name: "agent nodes (1 supervisor node)", x: func(p *FleetPoint) int { return p.Agents }},
	}
	for _, p := range r.Points {
		if p.Agents == 1 {
			series[0].points = append(series[0].points, p)
		}
		if p.Supervisors == 1 {
			series[1].points = append(series[1].points, p)
		}
	}
	for i := range series {
		slices.SortFunc(series[i].points, func(a, b *FleetPoint) int { return series[i].x(a) - series[i].x(b) })
	}
	if len(series[0].points) < 2 && len(series[1].points) < 2 {
		return fmt.Errorf("bench: a curve needs two shapes or more with one agent node, or with one supervisor node")
	}
	const panelW, h = 560, 460
	img := image.NewRGBA(image.Rect(0, 0, 2*panelW, h))
	fill(img, img.Bounds(), color.White)
	label(img, 20, 20, fmt.Sprintf("fleet scaling: %d sessions at %g/s, %d questions each, every node a process (%d cores)",
		r.Config.Sessions, r.Config.Rate, r.Config.Questions, r.Machine.Cores), color.Black)
	panel(img, 0, panelW, h, "requests/s", series, func(p *FleetPoint) float64 { return p.System.RequestsPS })
	panel(img, panelW, panelW, h, "question p99 (ms)", series, func(p *FleetPoint) float64 { return ms(p.System.Questions.P99) })
	return png.Encode(w, img)
}

// panel draws one chart of the curve at x0: value against members, one line a series.
func panel(img *image.RGBA, x0, w, h int, title string, series []fleetSeries, value func(*FleetPoint) float64) {
	const l, r, t, b = 70, 20, 60, 90
	maxX, maxY := 1, 0.0
	for _, s := range series {
		for _, p := range s.points {
			maxX, maxY = max(maxX, s.x(p)), math.Max(maxY, value(p))
		}
	}
	maxY = niceCeil(maxY)
	xOf := func(n int) int { return x0 + l + int(float64(n-1)/float64(max(maxX-1, 1))*float64(w-l-r)) }
	yOf := func(v float64) int { return h - b - int(v/maxY*float64(h-t-b)) }
	grey, black := color.RGBA{220, 220, 220, 255}, color.Black
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		line(img, x0+l, yOf(v), x0+w-r, yOf(v), grey)
		label(img, x0+8, yOf(v)+4, strconv.FormatFloat(v, 'f', -1, 64), black)
	}
	for n := 1; n <= maxX; n++ {
		line(img, xOf(n), t, xOf(n), h-b, grey)
		label(img, xOf(n)-3, h-b+16, fmt.Sprint(n), black)
	}
	line(img, x0+l, h-b, x0+w-r, h-b, black)
	line(img, x0+l, t, x0+l, h-b, black)
	label(img, x0+l, t-14, title, black)
	label(img, x0+w/2-30, h-b+34, "members", black)
	palette := []color.RGBA{{214, 39, 40, 255}, {31, 119, 180, 255}}
	for i, s := range series {
		c := palette[i%len(palette)]
		px, py := -1, -1
		for _, p := range s.points {
			x, y := xOf(s.x(p)), yOf(value(p))
			fill(img, image.Rect(x-3, y-3, x+4, y+4), c)
			if px >= 0 {
				thick(img, px, py, x, y, c)
			}
			px, py = x, y
		}
		ly := h - b + 52 + 16*i
		thick(img, x0+l, ly-4, x0+l+20, ly-4, c)
		label(img, x0+l+26, ly, s.name, black)
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
