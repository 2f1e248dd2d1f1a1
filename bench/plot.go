package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Plot size and margins, in pixels.
const (
	plotW, plotH           = 900, 560
	left, right, top, bott = 80, 150, 40, 60
)

// WritePNG draws the question round-trip percentile curves of every system, latency on
// a log scale against percentile on a log(1/(1-q)) scale, as HdrHistogram plots do.
func WritePNG(w io.Writer, r *Report) error {
	img := image.NewRGBA(image.Rect(0, 0, plotW, plotH))
	fill(img, img.Bounds(), color.White)
	var curves []*System
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range r.Systems {
		if s.Questions.hist == nil || s.Questions.Count == 0 {
			continue
		}
		curves = append(curves, s)
		lo = math.Min(lo, float64(max(s.Questions.hist.ValueAtQuantile(0), 1)))
		hi = math.Max(hi, float64(s.Questions.hist.Max()))
	}
	if len(curves) == 0 {
		return fmt.Errorf("bench: no question latencies to plot")
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	xOf := func(q float64) int {
		max := math.Log10(1 / (1 - 0.9999))
		return left + int(math.Log10(1/(1-q/100))/max*float64(plotW-left-right))
	}
	yOf := func(us float64) int {
		f := (math.Log10(us) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		return plotH - bott - int(f*float64(plotH-top-bott))
	}
	grey, black := color.RGBA{220, 220, 220, 255}, color.Black
	for v := lo; v <= hi*1.0001; v *= 10 {
		y := yOf(v)
		line(img, left, y, plotW-right, y, grey)
		label(img, 8, y+4, fmtUS(v), black)
	}
	for _, q := range []float64{0, 90, 99, 99.9, 99.99} {
		x := xOf(q)
		line(img, x, top, x, plotH-bott, grey)
		label(img, x-14, plotH-bott+18, fmt.Sprintf("%g%%", q), black)
	}
	line(img, left, plotH-bott, plotW-right, plotH-bott, black)
	line(img, left, top, left, plotH-bott, black)
	label(img, left, 24, fmt.Sprintf("question round trip by percentile (%d sessions, %s agents, %d cores)", r.Config.Sessions, r.Config.Agent, r.Machine.Cores), black)
	label(img, plotW/2-60, plotH-16, "percentile", black)
	palette := []color.RGBA{{214, 39, 40, 255}, {31, 119, 180, 255}, {44, 160, 44, 255}, {255, 127, 14, 255}, {148, 103, 189, 255},
		{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}}
	for i, s := range curves {
		c := palette[i%len(palette)]
		px, py := -1, -1
		for _, q := range []float64{0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99} {
			x, y := xOf(q), yOf(float64(max(s.Questions.hist.ValueAtQuantile(q), 1)))
			if px >= 0 {
				thick(img, px, py, x, y, c)
			}
			px, py = x, y
		}
		ly := top + 20 + 20*i
		thick(img, plotW-right+10, ly-4, plotW-right+30, ly-4, c)
		label(img, plotW-right+36, ly, s.Name, black)
	}
	return png.Encode(w, img)
}

func fmtUS(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%gs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%gms", us/1e3)
	}
	return fmt.Sprintf("%gus", us)
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.Set(x, y, c)
		}
	}
}

// line draws a straight line (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func thick(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	for d := -1; d <= 1; d++ {
		line(img, x0, y0+d, x1, y1+d, c)
	}
}

func label(img *image.RGBA, x, y int, s string, c color.Color) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
