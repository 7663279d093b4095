package postdedup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	Path     string
	Offset   int64
	Length   int64
	RecordID string
	URI      string
	Version  string
	Headers  [][2]string
	Head     []byte
	// PayloadLength is the payload the revisit no longer stores.
	PayloadLength int64
	Key           string
	Original      Original
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
		if json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(first), planFormat+"\t")), &h) != nil {
			p.close()
			return nil, fmt.Errorf("postdedup: plan %s: unsupported plan header", n)
		}
		if h.Format != lineFormat {
			p.close()
			return nil, fmt.Errorf("postdedup: plan %s: %w", n, errOldFormat("plan", h.Format))
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
