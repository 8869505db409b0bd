package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// etcdHistory reads the versions the API server stored in etcd between
// two resourceVersions (which are etcd's revisions): what a watch broken
// by a kube-apiserver restart did not deliver, and its relist cannot
// show. It speaks etcd's JSON gateway (/v3/watch), which serves any
// revision not yet compacted (the API server compacts every 5 minutes).
type etcdHistory struct {
	url    string
	decode runtime.Decoder
}

func newEtcdHistory(url string, scheme *runtime.Scheme) *etcdHistory {
	return &etcdHistory{url: url, decode: serializer.NewCodecFactory(scheme).UniversalDeserializer()}
}

// storedEvent is one change of one stored object.
type storedEvent struct {
	typ watch.EventType
	obj client.Object
}

// between returns the changes of the objects stored under prefix with a
// revision in (from, to], oldest first: Modified with the new version,
// Deleted with the last version and the deletion's revision.
func (h *etcdHistory) between(ctx context.Context, prefix string, from, to int64) ([]storedEvent, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	end := []byte(prefix)
	end[len(end)-1]++
	body, _ := json.Marshal(map[string]any{"create_request": map[string]any{
		"key": []byte(prefix), "range_end": end, "start_revision": strconv.FormatInt(from+1, 10), "prev_kv": true,
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url+"/v3/watch", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd watch: %s", resp.Status)
	}
	// The stored events come at once; the watch then waits for new ones.
	// Read until one past to, or until the stream has been quiet a moment
	// after reaching the store's revision at the watch's start.
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			select {
			case lines <- bytes.Clone(sc.Bytes()):
			case <-ctx.Done():
				return
			}
		}
	}()
	var out []storedEvent
	for {
		var line []byte
		select {
		case l, ok := <-lines:
			if !ok {
				return out, ctx.Err()
			}
			line = l
		case <-time.After(500 * time.Millisecond):
			return out, nil
		}
		var msg struct {
			Result struct {
				CompactRevision string `json:"compact_revision"`
				Canceled        bool   `json:"canceled"`
				Events          []struct {
					Type   string `json:"type"`
					KV     storedKV
					PrevKV *storedKV `json:"prev_kv"`
				} `json:"events"`
			} `json:"result"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("etcd watch: %w", err)
		}
		if msg.Result.Canceled {
			return nil, fmt.Errorf("etcd watch canceled (compacted at %s)", msg.Result.CompactRevision)
		}
		for _, e := range msg.Result.Events {
			rev, _ := strconv.ParseInt(e.KV.ModRevision, 10, 64)
			if rev > to {
				return out, nil
			}
			kv, typ := e.KV, watch.Modified
			if e.Type == "DELETE" {
				if e.PrevKV == nil {
					continue
				}
				kv, typ = *e.PrevKV, watch.Deleted
			}
			obj, _, err := h.decode.Decode(kv.Value, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("decoding %s: %w", kv.Key, err)
			}
			o, ok := obj.(client.Object)
			if !ok {
				return nil, fmt.Errorf("%s: %T is not an object", kv.Key, obj)
			}
			// A stored object carries no resourceVersion: it is its revision.
			o.SetResourceVersion(strconv.FormatInt(rev, 10))
			out = append(out, storedEvent{typ: typ, obj: o})
		}
	}
}

// storedKV is a key and value of etcd's JSON gateway (bytes in base64).
type storedKV struct {
	Key         []byte `json:"key"`
	Value       []byte `json:"value"`
	ModRevision string `json:"mod_revision"`
}
