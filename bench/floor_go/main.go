// The do-nothing floor in Go's standard library: net/http and encoding/json, as kube-scheduler
// itself decodes and encodes extender calls. It decodes what the extender is sent and answers a
// body of the same shape, doing no work of its own (bench/floor.py is the same in Python):
// filter: every name passes; prioritize: one fixed score per name.
//
//	go run ./bench/floor_go -port 8080
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
)

const fixedScore = 5

type extenderArgs struct {
	Pod       map[string]any
	Nodes     *nodeList
	NodeNames *[]string
}

type nodeList struct {
	Items []map[string]any `json:"items"`
}

type filterResult struct {
	Nodes                      *nodeList
	NodeNames                  *[]string
	FailedNodes                map[string]string
	FailedAndUnresolvableNodes map[string]string
	Error                      string
}

type hostPriority struct {
	Host  string
	Score int64
}

func decode(w http.ResponseWriter, r *http.Request) (*extenderArgs, bool) {
	var args extenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return &args, true
}

func names(args *extenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	found := []string{}
	if args.Nodes != nil {
		for _, node := range args.Nodes.Items {
			meta, _ := node["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			found = append(found, name)
		}
	}
	return found
}

func reply(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(body); err != nil {
		log.Print(err)
	}
}

func filter(w http.ResponseWriter, r *http.Request) {
	if args, ok := decode(w, r); ok {
		passed := names(args)
		reply(w, filterResult{
			Nodes: args.Nodes, NodeNames: &passed,
			FailedNodes: map[string]string{}, FailedAndUnresolvableNodes: map[string]string{},
		})
	}
}

func prioritize(w http.ResponseWriter, r *http.Request) {
	if args, ok := decode(w, r); ok {
		hosts := names(args)
		result := make([]hostPriority, len(hosts))
		for i, host := range hosts {
			result[i] = hostPriority{Host: host, Score: fixedScore}
		}
		reply(w, result)
	}
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port to listen on")
	flag.Parse()
	http.HandleFunc("/filter", filter)
	http.HandleFunc("/prioritize", prioritize)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	log.Fatal(http.ListenAndServe(fmt.Sprintf("%s:%d", *host, *port), nil))
}
