package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var createOpts = metav1.CreateOptions{}

// report prints the results as a table and writes them to out as JSON and Markdown.
func report(results []result, out string) {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPROVIDER\tSCENARIO\tRESULT\tTOOK\tDETAIL")
	var md strings.Builder
	md.WriteString("| provider | scenario | result | took | detail | figures |\n|---|---|---|---|---|---|\n")
	for _, r := range results {
		verdict := "PASS"
		if !r.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Provider, r.Scenario, verdict, r.Took, firstLine(r.Detail))
		keys := make([]string, 0, len(r.Figures))
		for k := range r.Figures {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var figs []string
		for _, k := range keys {
			figs = append(figs, k+": "+r.Figures[k])
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %s | %s |\n", r.Provider, r.Scenario, verdict, r.Took,
			strings.ReplaceAll(firstLine(r.Detail), "|", "\\|"), strings.ReplaceAll(strings.Join(figs, "; "), "|", "\\|"))
	}
	tw.Flush()
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "faults: report:", err)
		return
	}
	js, _ := json.MarshalIndent(results, "", "  ")
	for name, body := range map[string][]byte{"faults.json": js, "faults.md": []byte(md.String())} {
		if err := os.WriteFile(filepath.Join(out, name), body, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "faults: report:", err)
		}
	}
	fmt.Printf("report: %s/faults.md and faults.json\n", out)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
