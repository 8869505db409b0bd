package sim

import (
	gojson "encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	sigsjson "sigs.k8s.io/json"
)

// decodeError turns a JSON decoding error into a message naming the field.
func decodeError(raw []byte, err error) error {
	var te *gojson.UnmarshalTypeError
	if errors.As(err, &te) {
		path := "providerSpec"
		if te.Field != "" {
			path += "." + te.Field
		}
		return invalid(path, "%s, not %s", expectation(te.Type), te.Value)
	}
	if ok, off := sigsjson.SyntaxErrorOffset(err); ok {
		return invalid("providerSpec", "is not valid JSON (at byte %d of %d)", off, len(raw))
	}
	return invalid("providerSpec", "cannot be decoded: %s", strings.TrimPrefix(err.Error(), "json: "))
}

var durationType = reflect.TypeFor[Duration]()

func expectation(t reflect.Type) string {
	if t == durationType {
		return `must be a duration string such as "250ms"`
	}
	switch t.Kind() {
	case reflect.String:
		return "must be a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "must be an integer in range"
	case reflect.Float64, reflect.Float32:
		return "must be a number in range"
	case reflect.Bool:
		return "must be true or false"
	case reflect.Slice:
		return "must be a list"
	case reflect.Map, reflect.Struct:
		return "must be an object"
	case reflect.Pointer:
		return expectation(t.Elem())
	}
	return "must be a " + t.String()
}

func strictError(err error) error {
	fe, ok := err.(sigsjson.FieldError)
	if !ok {
		return invalid("providerSpec", "%s", err.Error())
	}
	path := fe.FieldPath()
	msg := strings.TrimSuffix(err.Error(), " "+fmt.Sprintf("%q", path))
	if msg == "unknown field" {
		if known := knownFields(path); known != "" {
			msg += "; known fields: " + known
		}
	}
	return invalid("providerSpec."+path, "%s", msg)
}

// knownFields lists the JSON fields of the object holding path, so that a
// typo's message shows the right spelling.
func knownFields(path string) string {
	t := reflect.TypeFor[ProviderSpec]()
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
		f, ok := fieldByTag(t, p)
		if !ok {
			return ""
		}
		t = f.Type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	var names []string
	for i := range t.NumField() {
		names = append(names, tagName(t.Field(i)))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if tagName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
