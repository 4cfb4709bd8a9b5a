package history

// EOSOutScale: the eos workload writes input value v, on its n-th attempt,
// to the output as v*EOSOutScale + n (n >= 1), so output values stay unique
// per key and each maps back to its input (DESIGN.md section 4).
const EOSOutScale = 1000

// EOSOffsets is the value of an eos-offsets line: the pipeline's input and
// output topics and its group's committed offset (the next input offset
// to process) per input key.
type EOSOffsets struct {
	Input   string           `json:"input"`
	Output  string           `json:"output"`
	Group   string           `json:"group"`
	Offsets map[string]int64 `json:"offsets"`
}
