package fakecloud

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// adminPrefix is the path prefix of the admin routes.
const adminPrefix = "/_fakecloud/"

// serveAdmin answers the admin routes:
//
//	GET  /_fakecloud/stats   Stats as JSON
//	GET  /_fakecloud/quota   the quotas in force
//	PUT  /_fakecloud/quota?api=DescribeInstances&limit=10&window=1s[&account=…][&policy=sliding][&burst=N]
//	                         sets a quota (api empty or "*": the account total;
//	                         limit "unlimited" or negative removes it), answers the quotas
//	PUT  /_fakecloud/faults  replaces the Faults with the JSON body (durations in ns)
//	POST /_fakecloud/reset   Reset
//
// Admin requests are not counted and get no fault.
func (c *Cloud) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch route := r.URL.Path[len(adminPrefix):]; {
	case route == "stats" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, c.Stats())
	case route == "quota" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, c.Quotas())
	case route == "quota" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		q, err := quotaFromQuery(r)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		c.SetQuota(q)
		writeJSON(w, http.StatusOK, c.Quotas())
	case route == "faults" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, c.Faults())
	case route == "faults" && r.Method == http.MethodPut:
		var f Faults
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&f); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		c.SetFaults(f)
		writeJSON(w, http.StatusOK, c.Faults())
	case route == "reset" && r.Method == http.MethodPost:
		c.Reset()
		w.WriteHeader(http.StatusNoContent)
	case route == "stats" || route == "quota" || route == "faults" || route == "reset":
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such admin route"})
	}
}

// quotaFromQuery reads a Quota from the query (or form) of r.
func quotaFromQuery(r *http.Request) (Quota, error) {
	_ = r.ParseForm()
	var q Quota
	q.API = r.Form.Get("api")
	if q.API == "*" {
		q.API = ""
	}
	q.Account = r.Form.Get("account")
	lim := r.Form.Get("limit")
	if lim == "" {
		return q, errorString("missing limit")
	}
	l, err := parseLimit(lim)
	if err != nil {
		return q, err
	}
	q.Limit = l
	if s := r.Form.Get("window"); s != "" {
		if q.Window, err = time.ParseDuration(s); err != nil {
			return q, err
		}
		if q.Window <= 0 {
			return q, errorString("window must be positive")
		}
	}
	if q.Policy, err = ParsePolicy(r.Form.Get("policy")); err != nil {
		return q, err
	}
	if s := r.Form.Get("burst"); s != "" {
		if q.Burst, err = strconv.Atoi(s); err != nil {
			return q, errorString("bad burst " + strconv.Quote(s))
		}
	}
	if s := r.Form.Get("unseen"); s != "" {
		if q.Unseen, err = strconv.Atoi(s); err != nil {
			return q, errorString("bad unseen " + strconv.Quote(s))
		}
	}
	return q.normalized(), nil
}

type errorString string

func (e errorString) Error() string { return "fakecloud: " + string(e) }
