package migrate

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// RiskModel is the risk registry: the questions asked of every format,
// their weights, and each format's answers.
type RiskModel struct {
	// Questions are the risk questions with their weights (any
	// non-negative numbers: they are normalised).
	Questions []Question `json:"questions"`
	// Formats maps a PUID to its entry.
	Formats map[string]FormatRisk `json:"formats"`
}

// Question is one risk question. An answer is a number in [0,1]: 0 means
// no risk on that question, 1 full risk.
type Question struct {
	ID     string  `json:"id"`
	Text   string  `json:"text"`
	Weight float64 `json:"weight"`
}

// FormatRisk is one format's entry: its name and its answers by question
// ID (a question left unanswered counts as 0.5, unknown).
type FormatRisk struct {
	Name    string             `json:"name"`
	Answers map[string]float64 `json:"answers"`
}

//go:embed default_risk.json
var defaultRisk []byte

// DefaultRiskModel returns the registry Wayside ships for web formats.
func DefaultRiskModel() *RiskModel {
	m, err := parseRiskModel(defaultRisk, "default_risk.json")
	if err != nil {
		panic(err) // the embedded registry is checked by TestDefaultRegistries
	}
	return m
}

// LoadRiskModel reads a registry from a JSON file.
func LoadRiskModel(path string) (*RiskModel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("migrate: risk registry: %w", err)
	}
	return parseRiskModel(b, path)
}

func parseRiskModel(b []byte, name string) (*RiskModel, error) {
	var m RiskModel
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("migrate: risk registry %s: %w", name, err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("migrate: risk registry %s: %w", name, err)
	}
	return &m, nil
}

func (m *RiskModel) check() error {
	if len(m.Questions) == 0 {
		return fmt.Errorf("no questions")
	}
	ids := map[string]bool{}
	var total float64
	for _, q := range m.Questions {
		if q.ID == "" || ids[q.ID] {
			return fmt.Errorf("question id %q empty or repeated", q.ID)
		}
		if q.Weight < 0 {
			return fmt.Errorf("question %s: negative weight %v", q.ID, q.Weight)
		}
		ids[q.ID] = true
		total += q.Weight
	}
	if total == 0 {
		return fmt.Errorf("every weight is 0")
	}
	for puid, f := range m.Formats {
		for id, a := range f.Answers {
			if !ids[id] {
				return fmt.Errorf("format %s: answer to unknown question %q", puid, id)
			}
			if a < 0 || a > 1 {
				return fmt.Errorf("format %s: answer %s = %v, want a number in [0,1]", puid, id, a)
			}
		}
	}
	return nil
}

// SetWeights overrides question weights ("id=w" pairs).
func (m *RiskModel) SetWeights(pairs []string) error {
	for _, p := range pairs {
		id, v, ok := strings.Cut(p, "=")
		var w float64
		if _, err := fmt.Sscan(v, &w); !ok || err != nil || w < 0 {
			return fmt.Errorf("migrate: weight %q: want QUESTION=NUMBER (>= 0)", p)
		}
		found := false
		for i := range m.Questions {
			if m.Questions[i].ID == id {
				m.Questions[i].Weight, found = w, true
			}
		}
		if !found {
			return fmt.Errorf("migrate: weight %q: no question %q", p, id)
		}
	}
	return m.check()
}

// Risk returns the risk value of puid in [0,1]: the weighted mean of its
// answers. A format the registry does not list has no known risk: ok is
// false.
func (m *RiskModel) Risk(puid string) (risk float64, ok bool) {
	f, ok := m.Formats[puid]
	if !ok {
		return 0, false
	}
	var sum, total float64
	for _, q := range m.Questions {
		a, ok := f.Answers[q.ID]
		if !ok {
			a = 0.5
		}
		sum += q.Weight * a
		total += q.Weight
	}
	return sum / total, true
}

// AtRisk returns the PUIDs whose risk is at least threshold, sorted.
func (m *RiskModel) AtRisk(threshold float64) []string {
	var out []string
	for puid := range m.Formats {
		if r, _ := m.Risk(puid); r >= threshold {
			out = append(out, puid)
		}
	}
	sort.Strings(out)
	return out
}
