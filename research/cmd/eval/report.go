package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Report accumulates the Markdown report and writes plots beside it.
type Report struct {
	dir      string
	b        strings.Builder
	verdicts []verdict
}

func (r *Report) P(format string, a ...any) {
	fmt.Fprintf(&r.b, format, a...)
	r.b.WriteString("\n\n")
}

func (r *Report) H(level int, title string) {
	r.b.WriteString(strings.Repeat("#", level) + " " + title + "\n\n")
}

// Table writes a Markdown table.
func (r *Report) Table(header []string, rows [][]string) {
	hs := make([]string, len(header))
	for i, h := range header {
		hs[i] = cellEscape(h)
	}
	r.b.WriteString("| " + strings.Join(hs, " | ") + " |\n|")
	for range header {
		r.b.WriteString("---|")
	}
	r.b.WriteString("\n")
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = cellEscape(c)
		}
		r.b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	r.b.WriteString("\n")
}

// Image embeds a plot file.
func (r *Report) Image(file, alt string) {
	fmt.Fprintf(&r.b, "![%s](%s)\n\n", alt, file)
}

// Series is one line of a plot.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
	Points bool // draw markers only
}

// Fig describes a line plot.
type Fig struct {
	File, Title, XLabel, YLabel string
	LogX, LogY                  bool
	YMin, YMax                  float64 // both 0: automatic
	Series                      []Series
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 255}, color.RGBA{0xd6, 0x27, 0x28, 255}, color.RGBA{0x2c, 0xa0, 0x2c, 255},
	color.RGBA{0xff, 0x7f, 0x0e, 255}, color.RGBA{0x94, 0x67, 0xbd, 255}, color.RGBA{0x8c, 0x56, 0x4b, 255},
	color.RGBA{0xe3, 0x77, 0xc2, 255}, color.RGBA{0x7f, 0x7f, 0x7f, 255}, color.RGBA{0xbc, 0xbd, 0x22, 255},
	color.RGBA{0x17, 0xbe, 0xcf, 255}, color.Black, color.RGBA{0x99, 0x99, 0x00, 255},
}

// Plot renders f to PNG in the report directory and embeds it.
func (r *Report) Plot(f Fig) {
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	for i, s := range f.Series {
		var xys plotter.XYs
		for k := range s.X {
			x, y := s.X[k], s.Y[k]
			if math.IsNaN(y) || math.IsInf(y, 0) || math.IsNaN(x) || (f.LogX && x <= 0) || (f.LogY && y <= 0) {
				continue
			}
			if f.YMax != 0 || f.YMin != 0 {
				y = math.Max(f.YMin, math.Min(f.YMax, y))
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
		if len(xys) == 0 {
			continue
		}
		c := palette[i%len(palette)]
		if s.Points {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				continue
			}
			sc.GlyphStyle.Color = c
			sc.GlyphStyle.Radius = vg.Points(2)
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			p.Add(sc)
			p.Legend.Add(s.Name, sc)
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			continue
		}
		l.Color = c
		l.Width = vg.Points(1.5)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	if f.YMax != 0 || f.YMin != 0 {
		p.Y.Min, p.Y.Max = f.YMin, f.YMax
	}
	path := filepath.Join(r.dir, f.File)
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		fmt.Fprintln(os.Stderr, "eval: plot", f.File, err)
		return
	}
	r.Image(f.File, f.Title)
}

// Bars renders a grouped bar chart (groups on x, one bar per series).
func (r *Report) Bars(file, title, ylabel string, groups []string, series []Series) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	w := vg.Points(14)
	for i, s := range series {
		v := plotter.Values(s.Y)
		b, err := plotter.NewBarChart(v, w)
		if err != nil {
			continue
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(series)-1)/2) * w
		p.Add(b)
		p.Legend.Add(s.Name, b)
	}
	p.NominalX(groups...)
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Left = true
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(r.dir, file)); err != nil {
		fmt.Fprintln(os.Stderr, "eval: plot", file, err)
		return
	}
	r.Image(file, title)
}

func f3(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	if math.IsInf(x, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3f", x)
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.2f", x)
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", 100*x)
}

func linspace(a, b float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = a + (b-a)*float64(i)/float64(n-1)
	}
	return out
}

func logspace(a, b float64, n int) []float64 {
	out := make([]float64, n)
	la, lb := math.Log(a), math.Log(b)
	for i := range out {
		out[i] = math.Exp(la + (lb-la)*float64(i)/float64(n-1))
	}
	return out
}

func constSeries(name string, xs []float64, y float64) Series {
	ys := make([]float64, len(xs))
	for i := range ys {
		ys[i] = y
	}
	return Series{Name: name, X: xs, Y: ys, Dashed: true}
}

// cellEscape escapes the pipes of a table cell (|log ratio|, |bias|).
func cellEscape(c string) string { return strings.ReplaceAll(c, "|", "\\|") }
