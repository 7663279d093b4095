package postdedup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/cdxj"
)

// planFormat is the first line of a plan file.
const planFormat = "#wayside-dedup-plan"

// PlanHeader is the first line of a plan.
type PlanHeader struct {
	Format    int      `json:"format"`
	Manifests []string `json:"manifests"`
	Policy    Policy   `json:"policy"`
}

// Copy is one plan line: a later copy to rewrite as a revisit of Original,
// with what the revisit keeps of it (its WARC header fields and the exact
// bytes of its HTTP head). Resolve has compared its payload with the
// original's byte for byte.
type Copy struct {
	Path     string      `json:"-"`
	Offset   int64       `json:"offset"`
	Length   int64       `json:"length"`
	RecordID string      `json:"record_id"`
	URI      string      `json:"uri"`
	Version  string      `json:"version"`
	Headers  [][2]string `json:"headers"`
	Head     []byte      `json:"head"`
	// PayloadLength is the payload the revisit no longer stores.
	PayloadLength int64    `json:"payload_length"`
	Key           string   `json:"key"`
	Original      Original `json:"original"`
}

func (c *Copy) appendLine(b []byte) []byte {
	b = append(b, escapeField(c.Path)...)
	b = append(b, '\t')
	b = appendOffset(b, c.Offset)
	b = append(b, '\t')
	js, _ := json.Marshal(c)
	return append(b, js...)
}

func parseCopy(line []byte) (*Copy, error) {
	f := bytes.SplitN(line, []byte{'\t'}, 3)
	if len(f) != 3 {
		return nil, errors.New("not a plan line (want 3 tab-separated fields)")
	}
	c := &Copy{}
	if err := json.Unmarshal(f[2], c); err != nil {
		return nil, fmt.Errorf("plan line JSON: %v", err)
	}
	c.Path = unescapeField(string(f[0]))
	if off, err := strconv.ParseInt(string(f[1]), 10, 64); err != nil || off != c.Offset {
		return nil, fmt.Errorf("plan line offset %q does not match its JSON offset %d", f[1], c.Offset)
	}
	if c.Length <= 0 || c.RecordID == "" || c.Original.RecordID == "" || len(c.Head) == 0 {
		return nil, errors.New("plan line lacks the copy's length, record ID, head or original")
	}
	return c, nil
}

// planReader merges plan files (each sorted by file and offset) into one
// stream of copies in file and offset order.
type planReader struct {
	names []string
	pr    *io.PipeReader
	br    *bufio.Reader
	done  chan error
	files []*os.File
	line  int
	peek  *Copy
}

// openPlans opens plan files for reading in (file, offset) order.
func openPlans(names []string) (*planReader, error) {
	p := &planReader{names: names, done: make(chan error, 1)}
	var inputs []cdxj.MergeInput
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("postdedup: plan: %w", err)
		}
		p.files = append(p.files, f)
		br := bufio.NewReader(f)
		first, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(first, planFormat+"\t") {
			p.close()
			return nil, fmt.Errorf("postdedup: plan %s: not a wayside dedup plan", n)
		}
		var h PlanHeader
		if json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(first), planFormat+"\t")), &h) != nil || h.Format != 1 {
			p.close()
			return nil, fmt.Errorf("postdedup: plan %s: unsupported plan header", n)
		}
		inputs = append(inputs, cdxj.MergeInput{Name: n, R: br})
	}
	pr, pw := io.Pipe()
	p.pr, p.br = pr, bufio.NewReaderSize(pr, 256<<10)
	go func() {
		err := cdxj.Merge(pw, inputs, cdxj.MergeOptions{})
		pw.CloseWithError(err)
		p.done <- err
	}()
	return p, nil
}

// next returns the next copy, or nil at the end.
func (p *planReader) next() (*Copy, error) {
	if p.peek != nil {
		c := p.peek
		p.peek = nil
		return c, nil
	}
	line, err := p.br.ReadBytes('\n')
	if len(line) == 0 {
		if err == io.EOF {
			return nil, nil
		}
		return nil, fmt.Errorf("postdedup: plan: %w", err)
	}
	p.line++
	c, perr := parseCopy(bytes.TrimRight(line, "\n"))
	if perr != nil {
		return nil, fmt.Errorf("postdedup: plan %v line %d (merged): %v", p.names, p.line, perr)
	}
	return c, nil
}

// copiesOf returns the copies of one input file (the plan must be read in
// file order: files are visited in path order).
func (p *planReader) copiesOf(path string) ([]*Copy, error) {
	var out []*Copy
	for {
		c, err := p.next()
		if err != nil || c == nil {
			return out, err
		}
		switch {
		case c.Path == path:
			out = append(out, c)
		case pathLess(path, c.Path):
			p.peek = c
			return out, nil
		default:
			return nil, fmt.Errorf("postdedup: plan names %s offset %d, which is not an input of the manifest", c.Path, c.Offset)
		}
	}
}

func (p *planReader) close() {
	if p.pr != nil {
		p.pr.Close()
		<-p.done
	}
	for _, f := range p.files {
		f.Close()
	}
}

// pathLess orders input files as manifests and plans sort them: by their
// escaped path followed by a tab, in byte order.
func pathLess(a, b string) bool {
	return escapeField(a)+"\t" < escapeField(b)+"\t"
}
