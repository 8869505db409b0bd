// Command hello is the workload of the kubelet node image
// (hack/tools/cloudimage.sh kubelet): an HTTP server on :8080 (or $PORT)
// that answers every path with the pod's name and the node it runs on
// (from $POD_NAME and $NODE_NAME, given by the downward API), and
// /healthz with "ok" for a readiness probe. It stops serving on SIGTERM,
// after the requests in flight.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := ":8080"
	if p := os.Getenv("PORT"); p != "" {
		addr = ":" + p
	}
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from pod %s (host %s) on node %s\n", os.Getenv("POD_NAME"), host, os.Getenv("NODE_NAME"))
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Println("hello: serving on", addr)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}
