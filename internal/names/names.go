// Package names derives object names from other names so that they always
// fit where they are used: a MachineSet's name is the value of its
// Machines' set-name label, and a Machine's name becomes its Node's name
// and the kubernetes.io/hostname label value; a label value holds at most
// 63 characters.
package names

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxLabelValue is the longest label value: names that end up in one
// (generated MachineSet and Machine names) are kept this short.
const MaxLabelValue = validation.LabelValueMaxLength

// Join returns base + "-" + suffix if it has at most max characters. A
// longer base is cut, and a short hash of the whole base is put in what
// was cut off, so that two bases sharing a long prefix still give
// different names. The suffix is kept whole: it is what makes the name
// unique among its siblings. The result starts and ends with an
// alphanumeric character when base and suffix do.
func Join(base, suffix string, max int) string {
	if name := base + "-" + suffix; len(name) <= max {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(base))
	digits := rand.SafeEncodeString(fmt.Sprintf("%010d", h.Sum32()))
	tag := digits[len(digits)-5:]
	keep := max - len(suffix) - len(tag) - 2
	if keep < 1 {
		// No room for the base at all: a suffix this long is a caller's bug.
		panic("names.Join: suffix " + suffix + " leaves no room in " + strconv.Itoa(max) + " characters")
	}
	cut := base[:keep]
	for len(cut) > 1 && !alnum(cut[len(cut)-1]) {
		cut = cut[:len(cut)-1] // "a-" + "-tag" would read as a double dash
	}
	return cut + "-" + tag + "-" + suffix
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z'
}
