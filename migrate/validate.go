package migrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // decoders for sources and results
	_ "image/jpeg"
	_ "image/png"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"

	"github.com/wayside-archive/wayside/characterize"
)

// Properties are the transformational properties compared between an
// original and its migration.
type Properties struct {
	// Images: size and, per channel (R, G, B, A on a 0–255 scale), the
	// mean and the spread (standard deviation) of the histogram.
	Width  int        `json:"width,omitempty"`
	Height int        `json:"height,omitempty"`
	Mean   [4]float64 `json:"mean,omitzero"`
	Spread [4]float64 `json:"spread,omitzero"`
	// Documents: pages.
	Pages int `json:"pages,omitempty"`
	// Audio and video: duration in seconds and streams by type.
	Duration float64        `json:"duration,omitempty"`
	Streams  map[string]int `json:"streams,omitempty"`
}

// Check is one compared property.
type Check struct {
	Property string `json:"property"`
	Source   string `json:"source"`
	Result   string `json:"result"`
	OK       bool   `json:"ok"`
}

// Validation is the outcome of validating one migration.
type Validation struct {
	// ResultPUID is what the result was identified as.
	ResultPUID string  `json:"result_puid"`
	Checks     []Check `json:"checks"`
	OK         bool    `json:"ok"`
}

// Failed returns the checks that failed, as "property: source → result".
func (v *Validation) Failed() string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c.Property+": "+c.Source+" → "+c.Result)
		}
	}
	return strings.Join(out, "; ")
}

// Validator characterizes results and compares properties. Decoding of
// images is done in Go (independently of the converter); durations,
// streams and page counts come from ffprobe and Ghostscript run in the
// sandbox.
type Validator struct {
	Engine  *characterize.Engine
	Sandbox *Sandbox
	Tools   *Tools
}

// Tolerances of the comparisons.
const (
	colourTolerance   = 1.5  // of 255, for mean and spread per channel
	durationTolerance = 0.15 // seconds, or 2% when larger
)

// Validate checks a migration of src to out by pathway p.
func (v *Validator) Validate(ctx context.Context, p *Pathway, src, out []byte, name string) (*Validation, error) {
	res := &Validation{}
	f := v.Engine.Identify(out, strings.TrimSuffix(name, "/")+"."+p.Ext, p.MIME)
	res.ResultPUID = f.PUID
	res.Checks = append(res.Checks, Check{Property: "format", Source: strings.Join(p.Targets, "|"), Result: f.PUID, OK: slices.Contains(p.Targets, f.PUID)})
	measured := src
	if len(p.SourcePages) > 0 {
		// The source's pages are those of a plain PDF rendering of it.
		tool, err := v.Tools.ResolveTool(ctx, p.Tool)
		if err != nil {
			return nil, err
		}
		if measured, err = v.Sandbox.Convert(ctx, tool, p.SourcePages, src, "pdf"); err != nil {
			return nil, fmt.Errorf("source: render for its page count: %w", err)
		}
	}
	a, err := v.properties(ctx, p.Kind, measured)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	b, err := v.properties(ctx, p.Kind, out)
	if err != nil {
		res.Checks = append(res.Checks, Check{Property: "readable", Source: "yes", Result: err.Error()})
		return res, nil
	}
	switch p.Kind {
	case "image":
		res.Checks = append(res.Checks,
			Check{"width", strconv.Itoa(a.Width), strconv.Itoa(b.Width), a.Width == b.Width},
			Check{"height", strconv.Itoa(a.Height), strconv.Itoa(b.Height), a.Height == b.Height})
		for i, ch := range []string{"red", "green", "blue", "alpha"} {
			res.Checks = append(res.Checks,
				Check{ch + " mean", ff(a.Mean[i]), ff(b.Mean[i]), math.Abs(a.Mean[i]-b.Mean[i]) <= colourTolerance},
				Check{ch + " spread", ff(a.Spread[i]), ff(b.Spread[i]), math.Abs(a.Spread[i]-b.Spread[i]) <= colourTolerance})
		}
	case "document":
		res.Checks = append(res.Checks, Check{"pages", strconv.Itoa(a.Pages), strconv.Itoa(b.Pages), a.Pages == b.Pages && b.Pages > 0})
	case "audio", "video":
		tol := max(durationTolerance, 0.02*a.Duration)
		res.Checks = append(res.Checks, Check{"duration", ff(a.Duration), ff(b.Duration), a.Duration > 0 && math.Abs(a.Duration-b.Duration) <= tol})
		for _, t := range []string{"audio", "video"} {
			res.Checks = append(res.Checks, Check{t + " streams", strconv.Itoa(a.Streams[t]), strconv.Itoa(b.Streams[t]), a.Streams[t] == b.Streams[t]})
		}
	}
	res.OK = true
	for _, c := range res.Checks {
		res.OK = res.OK && c.OK
	}
	return res, nil
}

func ff(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// properties measures data as kind.
func (v *Validator) properties(ctx context.Context, kind string, data []byte) (Properties, error) {
	switch kind {
	case "image":
		return v.imageProperties(ctx, data)
	case "document":
		gs, err := v.Tools.ResolveTool(ctx, "ghostscript")
		if err != nil {
			return Properties{}, err
		}
		out, err := v.Sandbox.Probe(ctx, gs, []string{"-q", "-dNODISPLAY", "-dSAFER", "--permit-file-read={in}", "-c", "({in}) (r) file runpdfbegin pdfpagecount = quit"}, data)
		if err != nil {
			return Properties{}, err
		}
		fields := strings.Fields(string(out))
		if len(fields) == 0 {
			return Properties{}, fmt.Errorf("ghostscript counted no pages")
		}
		n, err := strconv.Atoi(fields[len(fields)-1])
		if err != nil || n <= 0 {
			return Properties{}, fmt.Errorf("ghostscript counted no pages (%q)", lastLines(string(out), 1))
		}
		return Properties{Pages: n}, nil
	default: // audio, video
		fp, err := v.Tools.ResolveTool(ctx, "ffprobe")
		if err != nil {
			return Properties{}, err
		}
		out, err := v.Sandbox.Probe(ctx, fp, []string{"-v", "error", "-show_entries", "format=duration:stream=codec_type", "-of", "json", "{in}"}, data)
		if err != nil {
			return Properties{}, err
		}
		var probe struct {
			Format struct {
				Duration string `json:"duration"`
			} `json:"format"`
			Streams []struct {
				CodecType string `json:"codec_type"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(out, &probe); err != nil {
			return Properties{}, fmt.Errorf("ffprobe: %w", err)
		}
		p := Properties{Streams: map[string]int{}}
		p.Duration, _ = strconv.ParseFloat(probe.Format.Duration, 64)
		for _, s := range probe.Streams {
			p.Streams[s.CodecType]++
		}
		if p.Duration <= 0 || len(probe.Streams) == 0 {
			return Properties{}, fmt.Errorf("ffprobe found no duration or no streams")
		}
		return p, nil
	}
}

// imageProperties decodes data in Go; formats Go has no decoder for are
// decoded from ImageMagick's PAM rendering of them.
func (v *Validator) imageProperties(ctx context.Context, data []byte) (Properties, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	var img image.Image
	if err == nil {
		if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
			return Properties{}, fmt.Errorf("image of %dx%d pixels is over the limit of %d", cfg.Width, cfg.Height, maxPixels)
		}
		img, _, err = image.Decode(bytes.NewReader(data))
	}
	if err != nil {
		im, terr := v.Tools.ResolveTool(ctx, "imagemagick")
		if terr != nil {
			return Properties{}, fmt.Errorf("decode: %v", err)
		}
		pam, perr := v.Sandbox.Probe(ctx, im, []string{"{in}[0]", "-depth", "8", "PAM:-"}, data)
		if perr != nil {
			return Properties{}, fmt.Errorf("decode: %v; imagemagick: %v", err, perr)
		}
		if img, err = decodePAM(pam); err != nil {
			return Properties{}, fmt.Errorf("decode: %w", err)
		}
	}
	return histogram(img), nil
}

// maxPixels bounds images decoded for validation (decompression bombs).
const maxPixels = 100 << 20

func histogram(img image.Image) Properties {
	b := img.Bounds()
	p := Properties{Width: b.Dx(), Height: b.Dy()}
	var sum, sq [4]float64
	n := float64(b.Dx() * b.Dy())
	if n == 0 {
		return p
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			for i, v := range [4]float64{float64(c.R), float64(c.G), float64(c.B), float64(c.A)} {
				sum[i] += v
				sq[i] += v * v
			}
		}
	}
	for i := range sum {
		p.Mean[i] = sum[i] / n
		p.Spread[i] = math.Sqrt(max(0, sq[i]/n-p.Mean[i]*p.Mean[i]))
	}
	return p
}

// decodePAM decodes an 8-bit PAM image (P7) as ImageMagick writes it.
func decodePAM(b []byte) (image.Image, error) {
	r := bufio.NewReader(bytes.NewReader(b))
	var w, h, depth, maxval int
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "P7" {
		return nil, fmt.Errorf("not a PAM image")
	}
	for {
		line, err = r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("PAM header: %w", err)
		}
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if f[0] == "ENDHDR" {
			break
		}
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "WIDTH":
			w = n
		case "HEIGHT":
			h = n
		case "DEPTH":
			depth = n
		case "MAXVAL":
			maxval = n
		}
	}
	if w <= 0 || h <= 0 || depth < 1 || depth > 4 || maxval != 255 || int64(w)*int64(h) > maxPixels {
		return nil, fmt.Errorf("PAM image %dx%d depth %d maxval %d not supported", w, h, depth, maxval)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	px := make([]byte, depth)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if _, err := io.ReadFull(r, px); err != nil {
				return nil, fmt.Errorf("PAM data: %w", err)
			}
			c := color.NRGBA{A: 255}
			switch depth {
			case 1:
				c.R, c.G, c.B = px[0], px[0], px[0]
			case 2:
				c.R, c.G, c.B, c.A = px[0], px[0], px[0], px[1]
			case 3:
				c.R, c.G, c.B = px[0], px[1], px[2]
			case 4:
				c.R, c.G, c.B, c.A = px[0], px[1], px[2], px[3]
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img, nil
}
