// Package strictyaml is the tree's one way to read a YAML file a user
// wrote (matrix files, --image-spec, --faults): a field the type does not
// have is an error naming its line, not a setting silently ignored, and an
// empty file is an error, not a zero value.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// Load decodes the YAML file at path into v. Its errors name the path.
func Load(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err // *PathError: names the path
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: empty file", path)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
