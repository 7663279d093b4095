package migrate

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Pathway is one migration pathway: the source formats it takes, the
// target format it makes and the tool invocation that makes it.
type Pathway struct {
	Name string `json:"name"`
	// Kind is what Validate compares: image, audio, video or document.
	Kind string `json:"kind"`
	// Sources are the PUIDs the pathway converts; Targets the PUIDs a
	// result may be identified as (one format, several versions).
	Sources []string `json:"sources"`
	Targets []string `json:"targets"`
	// MIME and Ext are the media type and file extension of results.
	MIME string `json:"mime"`
	Ext  string `json:"ext"`
	// Tool names the converter (see Tools); Args its arguments, where
	// {in} and {out} stand for the input and output file ({outdir} for a
	// directory the converter names its output in, {dir} for the run's
	// private directory; see Sandbox.Convert).
	Tool string   `json:"tool"`
	Args []string `json:"args"`
	// SourcePages, for documents whose pages the validator cannot count
	// (office formats), is a second invocation of Tool that renders the
	// source as a plain PDF: its page count is the source's.
	SourcePages []string `json:"source_pages,omitempty"`
}

// Pathways is the pathway registry.
type Pathways struct {
	List []Pathway `json:"pathways"`
}

//go:embed default_pathways.json
var defaultPathways []byte

// DefaultPathways returns the pathways Wayside ships: ImageMagick for
// raster images to PNG, FFmpeg for PCM audio to FLAC and legacy video to
// WebM, Ghostscript for PDF to PDF/A-2b, LibreOffice (headless) for
// Word, Excel and PowerPoint 95/97-2003 and RTF documents to PDF/A-2b.
func DefaultPathways() *Pathways {
	p, err := parsePathways(defaultPathways, "default_pathways.json")
	if err != nil {
		panic(err) // checked by TestDefaultRegistries
	}
	return p
}

// LoadPathways reads a pathway registry from a JSON file.
func LoadPathways(path string) (*Pathways, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("migrate: pathways: %w", err)
	}
	return parsePathways(b, path)
}

func parsePathways(b []byte, name string) (*Pathways, error) {
	var p Pathways
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("migrate: pathways %s: %w", name, err)
	}
	seen := map[string]string{}
	for i, pw := range p.List {
		switch {
		case pw.Name == "":
			return nil, fmt.Errorf("migrate: pathways %s: pathway %d has no name", name, i)
		case !slices.Contains([]string{"image", "audio", "video", "document"}, pw.Kind):
			return nil, fmt.Errorf("migrate: pathways %s: %s: kind %q, want image, audio, video or document", name, pw.Name, pw.Kind)
		case len(pw.Sources) == 0 || len(pw.Targets) == 0:
			return nil, fmt.Errorf("migrate: pathways %s: %s: needs sources and targets", name, pw.Name)
		case !argsHave(pw.Args, "{in}") || !argsHave(pw.Args, "{out}") && !argsHave(pw.Args, "{outdir}"):
			return nil, fmt.Errorf("migrate: pathways %s: %s: args must name {in} and {out} (or {outdir})", name, pw.Name)
		case len(pw.SourcePages) > 0 && (pw.Kind != "document" || !argsHave(pw.SourcePages, "{in}") || !argsHave(pw.SourcePages, "{out}") && !argsHave(pw.SourcePages, "{outdir}")):
			return nil, fmt.Errorf("migrate: pathways %s: %s: source_pages is for documents and must name {in} and {out} (or {outdir})", name, pw.Name)
		case pw.MIME == "" || pw.Ext == "":
			return nil, fmt.Errorf("migrate: pathways %s: %s: needs mime and ext", name, pw.Name)
		}
		if _, ok := knownTools[pw.Tool]; !ok && !strings.HasPrefix(pw.Tool, "exec:") {
			return nil, fmt.Errorf("migrate: pathways %s: %s: unknown tool %q (known: imagemagick, ffmpeg, ghostscript, libreoffice, or exec:PROGRAM)", name, pw.Name, pw.Tool)
		}
		for _, s := range pw.Sources {
			if other, dup := seen[s]; dup {
				return nil, fmt.Errorf("migrate: pathways %s: %s is a source of both %s and %s", name, s, other, pw.Name)
			}
			seen[s] = pw.Name
		}
	}
	return &p, nil
}

func argsHave(args []string, s string) bool {
	for _, a := range args {
		if strings.Contains(a, s) {
			return true
		}
	}
	return false
}

// For returns the pathway converting puid.
func (p *Pathways) For(puid string) (*Pathway, bool) {
	for i := range p.List {
		if slices.Contains(p.List[i].Sources, puid) {
			return &p.List[i], true
		}
	}
	return nil, false
}

// knownTools lists, per tool name, the executables that may provide it and
// the text their version output must contain (Debian installs a "convert"
// that is not always ImageMagick's).
var knownTools = map[string]struct {
	candidates []string
	versionArg string
	marker     string
}{
	"imagemagick": {[]string{"magick", "convert-im6.q16", "convert"}, "-version", "ImageMagick"},
	"ffmpeg":      {[]string{"ffmpeg"}, "-version", "ffmpeg version"},
	"ffprobe":     {[]string{"ffprobe"}, "-version", "ffprobe version"},
	"ghostscript": {[]string{"gs"}, "--version", ""},
	"libreoffice": {[]string{"soffice", "libreoffice"}, "--version", "LibreOffice"},
}

// Tool is a resolved converter: its executable and version line.
type Tool struct {
	Name    string
	Path    string
	Version string
}

// Tools resolves tool names to executables once per run.
type Tools struct {
	m map[string]Tool
}

// ResolveTool finds the executable for name, checking its version output
// (so a stand-in of the same name is not taken for the real tool).
func (ts *Tools) ResolveTool(ctx context.Context, name string) (Tool, error) {
	if t, ok := ts.m[name]; ok {
		return t, nil
	}
	if prog, ok := strings.CutPrefix(name, "exec:"); ok {
		// A converter of the user's own (e.g. LibreOffice): run as named,
		// its version taken from --version when it answers.
		p, err := exec.LookPath(prog)
		if err != nil {
			return Tool{}, fmt.Errorf("migrate: tool %s: %w", name, err)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, _ := exec.CommandContext(cctx, p, "--version").Output()
		cancel()
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		t := Tool{Name: name, Path: p, Version: strings.TrimSpace(line)}
		if ts.m == nil {
			ts.m = map[string]Tool{}
		}
		ts.m[name] = t
		return t, nil
	}
	k, ok := knownTools[name]
	if !ok {
		return Tool{}, fmt.Errorf("migrate: unknown tool %q", name)
	}
	var tried []string
	for _, c := range k.candidates {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		tried = append(tried, p)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(cctx, p, k.versionArg).Output()
		cancel()
		if err != nil || !bytes.Contains(out, []byte(k.marker)) {
			continue
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if name == "ghostscript" {
			line = "Ghostscript " + line
		}
		t := Tool{Name: name, Path: p, Version: strings.TrimSpace(line)}
		if ts.m == nil {
			ts.m = map[string]Tool{}
		}
		ts.m[name] = t
		return t, nil
	}
	if len(tried) > 0 {
		return Tool{}, fmt.Errorf("migrate: tool %s: %s found but is not %s", name, strings.Join(tried, ", "), name)
	}
	return Tool{}, fmt.Errorf("migrate: tool %s is not installed (looked for %s)", name, strings.Join(k.candidates, ", "))
}
