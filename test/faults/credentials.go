package main

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// credentials: no configured secret, handed-out cloud token or the ccm's own ServiceAccount
// token appears in any log of any ccm this run started (every scenario runs at -v=10), raw or
// base64-encoded. The secrets themselves are never printed: only which one, by position.
func credentials(h *harness) result {
	secrets, err := h.cloud.Secrets(h.ctx)
	if err != nil {
		return fail("reading the simulator's secrets: %v", err)
	}
	kinds := make([]string, 0, len(secrets))
	for i := range secrets {
		kinds = append(kinds, fmt.Sprintf("cloud secret #%d", i+1))
	}
	for i, c := range h.all {
		if c.Token != "" {
			secrets = append(secrets, c.Token)
			kinds = append(kinds, fmt.Sprintf("ServiceAccount token of ccm #%d", i+1))
		}
	}
	if len(h.all) == 0 {
		return fail("no ccm ran before this scenario: nothing to check (run it after the others)")
	}
	lines, bodies := 0, 0
	for _, c := range h.all {
		log := c.Log()
		lines += strings.Count(log, "\n")
		bodies += strings.Count(log, "Response Body")
		for i, s := range secrets {
			if len(s) < 6 { // too short to tell from ordinary text
				continue
			}
			for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s))} {
				if strings.Contains(log, form) {
					return fail("%s appears in the log of %s", kinds[i], c.Name)
				}
			}
		}
	}
	figs := map[string]string{
		"logs":               fmt.Sprint(len(h.all)),
		"lines":              fmt.Sprint(lines),
		"secrets checked":    fmt.Sprint(len(secrets)),
		"logged HTTP bodies": fmt.Sprint(bodies),
	}
	// At -v=8 and above client-go logs response bodies: proof the logs were as verbose as asked.
	if *verbosity >= 8 && bodies == 0 {
		return withFigures(fail("the logs hold no HTTP bodies at -v=%d: the scan proves nothing", *verbosity), figs)
	}
	return pass(fmt.Sprintf("%d secrets and tokens absent from %d lines of %d ccm logs at -v=%d", len(secrets), lines, len(h.all), *verbosity), figs)
}
