package k8s

import (
	"fmt"
	"strconv"
	"strings"
)

// The module has no YAML library, and this package must not add one: parseYAML reads the block-style subset of
// YAML that the manifests use (mappings, sequences, plain, single- and double-quoted scalars, empty or flat flow
// sequences, comments, "---" document separators) and rejects everything else (anchors, aliases, tags, block
// scalars, multi-line plain scalars, non-empty flow mappings, duplicate keys) with an error, so that a manifest
// it cannot read exactly fails the test instead of being misread. TestParserAgreesWithPyYAML checks it against a
// full YAML implementation when one is available.

// yline is one non-blank, comment-stripped line.
type yline struct {
	no     int // 1-based line number in the file
	indent int
	text   string
}

// parseYAML returns the documents of a multi-document YAML file; empty documents are dropped.
// Mappings are map[string]any, sequences []any, scalars string, int64, bool or nil.
func parseYAML(src string) ([]any, error) {
	var docs []any
	var cur []yline
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		p := &yparser{lines: cur}
		v, err := p.node(cur[0].indent)
		if err != nil {
			return err
		}
		if p.i != len(p.lines) {
			l := p.lines[p.i]
			return fmt.Errorf("line %d: unexpected indentation %d", l.no, l.indent)
		}
		docs = append(docs, v)
		cur = nil
		return nil
	}
	for i, raw := range strings.Split(src, "\n") {
		raw = strings.TrimRight(raw, "\r")
		if strings.Contains(raw, "\t") {
			return nil, fmt.Errorf("line %d: tab character", i+1)
		}
		if raw == "---" || strings.HasPrefix(raw, "--- #") {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if strings.HasPrefix(raw, "---") || strings.HasPrefix(raw, "...") || strings.HasPrefix(raw, "%") {
			return nil, fmt.Errorf("line %d: unsupported document marker or directive %q", i+1, raw)
		}
		text, err := stripComment(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		indent := len(text) - len(strings.TrimLeft(text, " "))
		cur = append(cur, yline{no: i + 1, indent: indent, text: strings.TrimSpace(text)})
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

// stripComment removes a comment: "#" at the start or after a space, outside quotes.
func stripComment(s string) (string, error) {
	inS, inD := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inD:
			if c == '\\' {
				i++
			} else if c == '"' {
				inD = false
			}
		case inS:
			if c == '\'' {
				inS = false
			}
		case c == '"' && (i == 0 || strings.ContainsRune(" :-[,", rune(s[i-1]))):
			inD = true
		case c == '\'' && (i == 0 || strings.ContainsRune(" :-[,", rune(s[i-1]))):
			inS = true
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimRight(s[:i], " "), nil
		}
	}
	if inS || inD {
		return "", fmt.Errorf("unterminated quoted string (multi-line quoted scalars are not supported)")
	}
	return strings.TrimRight(s, " "), nil
}

type yparser struct {
	lines []yline
	i     int
}

func isSeqItem(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// node parses the block node whose lines start at column indent.
func (p *yparser) node(indent int) (any, error) {
	if p.i >= len(p.lines) {
		return nil, nil
	}
	l := p.lines[p.i]
	if l.indent != indent {
		return nil, fmt.Errorf("line %d: indentation %d, want %d", l.no, l.indent, indent)
	}
	if isSeqItem(l.text) {
		return p.seq(indent)
	}
	if _, _, ok, err := splitKey(l.text); err != nil {
		return nil, fmt.Errorf("line %d: %v", l.no, err)
	} else if ok {
		return p.mapping(indent)
	}
	// A lone scalar: only as a whole document.
	p.i++
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		return nil, fmt.Errorf("line %d: multi-line plain scalars are not supported", p.lines[p.i].no)
	}
	return scalar(l.text)
}

func (p *yparser) seq(indent int) ([]any, error) {
	out := []any{}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, fmt.Errorf("line %d: unexpected indentation %d", l.no, l.indent)
		}
		if !isSeqItem(l.text) {
			break
		}
		rest := strings.TrimLeft(strings.TrimPrefix(l.text, "-"), " ")
		if rest == "" {
			p.i++
			if p.i < len(p.lines) && p.lines[p.i].indent > indent {
				v, err := p.node(p.lines[p.i].indent)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			} else {
				out = append(out, nil)
			}
			continue
		}
		// "- rest": rest is a node starting at the column after "- ". Rewrite the line and parse it there.
		col := indent + (len(l.text) - len(rest))
		p.lines[p.i] = yline{no: l.no, indent: col, text: rest}
		if isSeqItem(rest) {
			return nil, fmt.Errorf("line %d: nested inline sequences are not supported", l.no)
		}
		if _, _, ok, err := splitKey(rest); err != nil {
			return nil, fmt.Errorf("line %d: %v", l.no, err)
		} else if ok {
			v, err := p.mapping(col)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		p.i++
		if p.i < len(p.lines) && p.lines[p.i].indent > indent {
			return nil, fmt.Errorf("line %d: multi-line plain scalars are not supported", p.lines[p.i].no)
		}
		v, err := scalar(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", l.no, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *yparser) mapping(indent int) (map[string]any, error) {
	out := map[string]any{}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, fmt.Errorf("line %d: unexpected indentation %d (multi-line plain scalars are not supported)", l.no, l.indent)
		}
		if isSeqItem(l.text) {
			break // a sequence at the indentation of its parent mapping's key ends here
		}
		key, val, ok, err := splitKey(l.text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", l.no, err)
		}
		if !ok {
			return nil, fmt.Errorf("line %d: want key: value, got %q", l.no, l.text)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("line %d: duplicate key %q", l.no, key)
		}
		p.i++
		if val != "" {
			v, err := scalar(val)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", l.no, err)
			}
			if p.i < len(p.lines) && p.lines[p.i].indent > indent {
				return nil, fmt.Errorf("line %d: multi-line plain scalars are not supported", p.lines[p.i].no)
			}
			out[key] = v
			continue
		}
		switch {
		case p.i < len(p.lines) && p.lines[p.i].indent > indent:
			v, err := p.node(p.lines[p.i].indent)
			if err != nil {
				return nil, err
			}
			out[key] = v
		case p.i < len(p.lines) && p.lines[p.i].indent == indent && isSeqItem(p.lines[p.i].text):
			v, err := p.seq(indent)
			if err != nil {
				return nil, err
			}
			out[key] = v
		default:
			out[key] = nil
		}
	}
	return out, nil
}

// splitKey splits "key: value" (or "key:"); ok is false when the text is not a mapping entry.
func splitKey(t string) (key, val string, ok bool, err error) {
	if t == "" {
		return "", "", false, nil
	}
	if t[0] == '"' || t[0] == '\'' {
		// A quoted key, or a quoted scalar.
		end := closingQuote(t)
		if end < 0 {
			return "", "", false, fmt.Errorf("unterminated quoted string")
		}
		after := t[end+1:]
		if after == ":" || strings.HasPrefix(after, ": ") {
			k, err := scalar(t[:end+1])
			if err != nil {
				return "", "", false, err
			}
			ks, isStr := k.(string)
			if !isStr {
				return "", "", false, fmt.Errorf("non-string key")
			}
			return ks, strings.TrimSpace(strings.TrimPrefix(after, ":")), true, nil
		}
		return "", "", false, nil
	}
	if strings.ContainsAny(t[:1], "[{&*!|>?@`%") {
		return "", "", false, nil
	}
	for i := 0; i < len(t); i++ {
		if t[i] == ':' && (i == len(t)-1 || t[i+1] == ' ') {
			k := t[:i]
			if strings.ContainsAny(k, "#{}[]") || strings.TrimSpace(k) != k {
				return "", "", false, fmt.Errorf("unsupported key %q", k)
			}
			return k, strings.TrimSpace(t[i+1:]), true, nil
		}
	}
	return "", "", false, nil
}

func closingQuote(t string) int {
	q := t[0]
	for i := 1; i < len(t); i++ {
		switch {
		case q == '"' && t[i] == '\\':
			i++
		case t[i] == q:
			if q == '\'' && i+1 < len(t) && t[i+1] == '\'' {
				i++
				continue
			}
			return i
		}
	}
	return -1
}

// scalar converts a one-line scalar.
func scalar(t string) (any, error) {
	switch t[0] {
	case '"':
		if closingQuote(t) != len(t)-1 {
			return nil, fmt.Errorf("text after quoted string: %q", t)
		}
		s, err := strconv.Unquote(t)
		if err != nil {
			return nil, fmt.Errorf("unsupported double-quoted string %s: %v", t, err)
		}
		return s, nil
	case '\'':
		if closingQuote(t) != len(t)-1 {
			return nil, fmt.Errorf("text after quoted string: %q", t)
		}
		return strings.ReplaceAll(t[1:len(t)-1], "''", "'"), nil
	case '[':
		return flowSeq(t)
	case '{':
		if t == "{}" {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("flow mappings are not supported: %q", t)
	case '&', '*', '!', '|', '>', '@', '`', '%', '?', ',', ']', '}':
		return nil, fmt.Errorf("unsupported YAML construct: %q", t)
	}
	if strings.Contains(t, ": ") || strings.Contains(t, " #") {
		return nil, fmt.Errorf("ambiguous plain scalar %q", t)
	}
	switch t {
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	case "null", "Null", "NULL", "~":
		return nil, nil
	case "yes", "no", "on", "off", "y", "n", "Yes", "No", "On", "Off", "YES", "NO", "ON", "OFF":
		return nil, fmt.Errorf("%q is a boolean in YAML 1.1 and a string in YAML 1.2: quote it", t)
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil && (t == "0" || !strings.HasPrefix(strings.TrimLeft(t, "+-"), "0")) {
		return n, nil
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil || strings.HasPrefix(t, "0") && len(t) > 1 || strings.HasPrefix(t, ".") {
		return nil, fmt.Errorf("number-like plain scalar %q: quote it", t)
	}
	return t, nil
}

// flowSeq parses a flat flow sequence of scalars: [a, "b", 'c'].
func flowSeq(t string) ([]any, error) {
	if !strings.HasSuffix(t, "]") {
		return nil, fmt.Errorf("unsupported flow sequence %q", t)
	}
	body := strings.TrimSpace(t[1 : len(t)-1])
	out := []any{}
	for body != "" {
		var item string
		if body[0] == '"' || body[0] == '\'' {
			end := closingQuote(body)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted string in %q", t)
			}
			item, body = body[:end+1], strings.TrimSpace(body[end+1:])
		} else {
			j := strings.IndexByte(body, ',')
			if j < 0 {
				j = len(body)
			}
			item, body = strings.TrimSpace(body[:j]), body[j:]
			if strings.ContainsAny(item, "[]{}:") {
				return nil, fmt.Errorf("unsupported item %q in flow sequence %q", item, t)
			}
		}
		if item == "" {
			return nil, fmt.Errorf("empty item in flow sequence %q", t)
		}
		v, err := scalar(item)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if body != "" {
			if body[0] != ',' {
				return nil, fmt.Errorf("want ',' in flow sequence %q", t)
			}
			body = strings.TrimSpace(body[1:])
			if body == "" {
				return nil, fmt.Errorf("trailing ',' in flow sequence %q", t)
			}
		}
	}
	return out, nil
}
