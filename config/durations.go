package config

import (
	"bytes"
	"maps"
	"reflect"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

var durationType = reflect.TypeFor[Duration]()

// decode decodes src into f. The TOML library stops at the first value an unmarshaler
// refuses, so every duration is checked first, each bad one reported and left out, and
// the rest decoded: a manifest with three bad durations gets three messages.
func (v *validator) decode(src string, f *file) (toml.MetaData, error) {
	var tree map[string]any
	if _, err := toml.Decode(src, &tree); err != nil {
		return toml.MetaData{}, err
	}
	if !v.badDurations(tree, reflect.TypeFor[file](), nil) {
		return toml.Decode(src, f)
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(tree); err != nil {
		return toml.MetaData{}, err
	}
	return toml.Decode(buf.String(), f)
}

// badDurations walks tree along the struct type t, reports every value of a Duration
// field that is not a duration and deletes it from tree; it returns whether it did.
func (v *validator) badDurations(tree map[string]any, t reflect.Type, path []string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	fields := tomlFields(t)
	found := false
	for key, value := range tree {
		ft, ok := fields[key]
		if !ok {
			continue // an unknown key: reported once decoded
		}
		at := append(append([]string{}, path...), key)
		if ft == durationType {
			var d Duration
			if err := d.UnmarshalTOML(value); err != nil {
				v.add(at, "%v", err)
				delete(tree, key)
				found = true
			}
			continue
		}
		found = v.badDurationsIn(value, ft, at) || found
	}
	return found
}

// badDurationsIn is badDurations for a value that may be a table, a map of tables or an
// array of tables.
func (v *validator) badDurationsIn(value any, t reflect.Type, path []string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	found := false
	switch x := value.(type) {
	case map[string]any:
		if t.Kind() != reflect.Map {
			return v.badDurations(x, t, path)
		}
		for name, entry := range x {
			if sub, ok := entry.(map[string]any); ok {
				found = v.badDurations(sub, t.Elem(), append(append([]string{}, path...), name)) || found
			}
		}
	case []map[string]any:
		if t.Kind() == reflect.Slice {
			for i, entry := range x {
				found = v.badDurations(entry, t.Elem(), append(append([]string{}, path...), strconv.Itoa(i))) || found
			}
		}
	}
	return found
}

// tomlFields are the types of struct type t's fields by toml key, its embedded
// structs' in their place.
func tomlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch {
		case name == "-":
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			maps.Copy(out, tomlFields(f.Type))
		case name != "":
			out[name] = f.Type
		}
	}
	return out
}
