package simcontrol

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Client talks to a simulator's control endpoint.
type Client struct{ URL string }

func (c Client) SetOutage(ctx context.Context, on bool) error {
	return c.post(ctx, "/outage", url.Values{"on": {strconv.FormatBool(on)}})
}

func (c Client) SetThrottle(ctx context.Context, burst int, rate float64) error {
	return c.post(ctx, "/throttle", url.Values{"burst": {strconv.Itoa(burst)}, "rate": {strconv.FormatFloat(rate, 'g', -1, 64)}})
}

func (c Client) Terminate(ctx context.Context, node string) error {
	return c.post(ctx, "/terminate", url.Values{"node": {node}})
}

func (c Client) Resources(ctx context.Context) ([]Resource, error) {
	var r []Resource
	return r, c.get(ctx, "/resources", &r)
}

func (c Client) Calls(ctx context.Context) (Calls, error) {
	var r Calls
	return r, c.get(ctx, "/calls", &r)
}

func (c Client) Secrets(ctx context.Context) ([]string, error) {
	var r []string
	return r, c.get(ctx, "/secrets", &r)
}

func (c Client) post(ctx context.Context, path string, q url.Values) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	return c.do(req, nil)
}

func (c Client) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		return err
	}
	return c.do(req, into)
}

func (c Client) do(req *http.Request, into any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("simulator %s %s: %s: %s", req.Method, req.URL.Path, resp.Status, body)
	}
	if into == nil {
		return nil
	}
	return json.Unmarshal(body, into)
}
