package machine

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
)

// ensureBootstrapToken returns the Machine's bootstrap token ("id.secret"),
// creating its Secret in the target cluster's kube-system if needed. The
// token's ID derives from the Machine's UID, so a retried create finds the
// token made by the first attempt. It expires at the Machine's creation
// deadline (see tokenExpiry), and is deleted once the Node has joined.
func (r *Reconciler) ensureBootstrapToken(ctx context.Context, s *scope) (string, error) {
	r.tokenless.forget(s.machine.UID) // it has one now, or may have
	id := bootstraptoken.ID(s.machine.UID)
	expiry := tokenExpiry(s)
	existing := &corev1.Secret{}
	err := r.TargetAPI.Get(ctx, bootstraptoken.Key(id), existing)
	if err == nil {
		have, ok := bootstraptoken.Expiration(existing)
		if !ok || !have.Before(expiry) {
			return bootstraptoken.Token(id, bootstraptoken.SecretOf(existing)), nil
		}
		// Made before the Machine waited for its turn in its class's
		// create queue, for a deadline that has moved since: no VM has
		// had it yet (its create starts now), so a new one replaces it.
		if err := r.TargetAPI.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
			return "", err
		}
	} else if !apierrors.IsNotFound(err) {
		return "", err
	}
	tokenSecret, err := bootstraptoken.NewSecret()
	if err != nil {
		return "", err
	}
	secret := bootstraptoken.Build(bootstraptoken.Spec{
		ID: id, Secret: tokenSecret,
		Expiration:  expiry,
		Description: bootstraptoken.Describe("Machine", s.machine.Namespace, s.machine.Name),
		Annotations: map[string]string{v1alpha1.NodeMachineAnnotation: s.machine.Name, v1alpha1.NodeClusterNamespaceAnnotation: s.machine.Namespace},
	})
	if err := r.TargetAPI.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) { // created by a concurrent attempt; use it
			return r.ensureBootstrapToken(ctx, s)
		}
		return "", err
	}
	return bootstraptoken.Token(id, tokenSecret), nil
}

// tokenExpiry is when the Machine's bootstrap token expires: at its
// creation deadline, which counts from the start of its create
// (classlimit.CreateStart), not from its creation: a Machine may wait
// longer than its creation timeout in its class's create queue. A Machine
// still waiting starts its create in this reconcile at the earliest.
func tokenExpiry(s *scope) time.Time {
	start, waiting := classlimit.CreateStart(s.machine)
	if waiting {
		start = s.now
	}
	return start.Add(s.life.creationTimeout).Truncate(time.Second) // as the Secret holds it
}

// cleanupBootstrapToken deletes the bootstrap token once the Node joined: it
// is a credential, and nothing needs it any more. A deletion that failed
// is tried again by the reconciles that follow, for as long as the token
// may still be valid (until its expiry, when the API server refuses it):
// the join happens once, and a token left behind by one failed call would
// otherwise stay usable until it expires.
func (r *Reconciler) cleanupBootstrapToken(ctx context.Context, s *scope) (reconcile.Result, error) {
	if r.tokenless.has(s.machine.UID) || !s.isTrue(v1alpha1.ReadyCondition) {
		return reconcile.Result{}, nil
	}
	if !s.joined && !s.now.Before(tokenExpiry(s)) {
		return reconcile.Result{}, nil // expired: useless, and its owner (the token cleaner) deletes it
	}
	// Most Machines never had a token (their user data asks for none): a
	// read first spares the API server a write that would find nothing.
	// Where this process rendered the user data, or deleted the token, it
	// knows (tokenless).
	key := bootstraptoken.Key(bootstraptoken.ID(s.machine.UID))
	secret := &corev1.Secret{}
	err := r.TargetAPI.Get(ctx, key, secret)
	if err == nil {
		err = r.TargetAPI.Delete(ctx, secret)
	}
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err // retried with the controller's backoff
	}
	r.tokenless.add(s.machine.UID)
	return reconcile.Result{}, nil
}

// tokenless remembers the Machines (by UID) whose user data this process
// last rendered without a bootstrap token, or whose token it deleted: it
// made none for them since (only ensureBootstrapToken makes one, and it
// forgets the Machine first), so the cleanup after the join need not read
// the token Secret. That read was one API round trip per created Machine
// in a machine worker, a tenth of the workers' time in a rolling update of
// 1000 Machines (docs/benchmarks-history.md). A restart forgets all: the
// cleanup reads again (for Machines whose token may still be valid), as a
// token made by the process before may exist.
type tokenless struct {
	mu sync.Mutex
	m  map[types.UID]struct{}
}

func (t *tokenless) has(uid types.UID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[uid]
	return ok
}

func (t *tokenless) add(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[types.UID]struct{}{}
	}
	t.m[uid] = struct{}{}
}

func (t *tokenless) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, uid)
}
