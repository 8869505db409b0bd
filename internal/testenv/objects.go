package testenv

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ObjectID names an object as kubectl prints it: kind.group/name, with the
// namespace in front when it has one.
func ObjectID(u *unstructured.Unstructured) string {
	s := strings.ToLower(u.GetKind())
	if g := u.GroupVersionKind().Group; g != "" {
		s += "." + g
	}
	s += "/" + u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		s = ns + " " + s
	}
	return s
}

// FindObject returns the object of kind and name among objs (rendered
// manifests), failing the test without it.
func FindObject(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s among the rendered objects", kind, name)
	return nil
}

// FromUnstructured converts u into a typed object, failing the test on a
// field the type does not have.
func FromUnstructured(t testing.TB, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s: %v", ObjectID(u), err)
	}
}

// Container returns the container of that name, failing the test without it.
func Container(t testing.TB, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}
