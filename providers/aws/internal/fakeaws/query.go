package fakeaws

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// form is one decoded Query request (EC2 and ELB both send form-encoded POST bodies).
type form url.Values

func (f form) get(k string) string { return url.Values(f).Get(k) }

// list returns P.1, P.2, ... (the EC2 "flat" list encoding) until the first gap.
func (f form) list(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := f[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

// structs returns the prefixes P.1, P.2, ... of a list of structures until the first gap.
func (f form) structs(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		p := prefix + "." + strconv.Itoa(i) + "."
		found := false
		for k := range f {
			if strings.HasPrefix(k, p) {
				found = true
				break
			}
		}
		if !found {
			return out
		}
		out = append(out, p)
	}
}

// filters decodes Filter.N.Name / Filter.N.Value.M.
func (f form) filters() map[string][]string {
	out := map[string][]string{}
	for _, p := range f.structs("Filter") {
		out[f.get(p+"Name")] = append(out[f.get(p+"Name")], f.list(p+"Value")...)
	}
	return out
}

// tags decodes a list of Key/Value structures under prefix (e.g. "Tag" or "Tags.member").
func (f form) tags(prefix string) map[string]string {
	out := map[string]string{}
	for _, p := range f.structs(prefix) {
		out[f.get(p+"Key")] = f.get(p + "Value")
	}
	return out
}

// w writes XML with escaping; responses are built by hand in the shapes of the API reference.
type w struct{ b strings.Builder }

func (x *w) open(name string)  { x.b.WriteString("<" + name + ">") }
func (x *w) close(name string) { x.b.WriteString("</" + name + ">") }
func (x *w) leaf(name, v string) {
	x.open(name)
	_ = xml.EscapeText(&x.b, []byte(v))
	x.close(name)
}
func (x *w) leafInt(name string, v int) { x.leaf(name, strconv.Itoa(v)) }

// apiError is an error answer of the fake, in the code vocabulary of the real API.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func notFound(code, format string, args ...any) *apiError {
	return &apiError{Status: 400, Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *apiError {
	return &apiError{Status: 400, Code: "InvalidParameterValue", Message: fmt.Sprintf(format, args...)}
}
