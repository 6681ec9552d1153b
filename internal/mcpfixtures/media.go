package mcpfixtures

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"sync"
)

// The media are made at their first use, not at init: this package is
// linked into every myelin binary (mcpserver, behind `mcp serve
// --conformance-fixtures`), and encoding a PNG was the costliest package
// init of `myelin version` (issue 34).

// redPixelPNG is a 1x1 red PNG: the image the scenarios ask for.
var redPixelPNG = sync.OnceValue(func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic("encoding a 1x1 PNG: " + err.Error()) // cannot fail writing to memory
	}
	return b.Bytes()
})

// silentWAV is a tenth of a second of silence as a WAV file (PCM, 8 kHz,
// 8-bit, mono): the audio the scenarios ask for.
var silentWAV = sync.OnceValue(func() []byte {
	const rate, samples = 8000, 800
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) } // cannot fail writing to memory
	b.WriteString("RIFF")
	w(uint32(36 + samples))
	b.WriteString("WAVEfmt ")
	w(uint32(16))   // the fmt chunk's size
	w(uint16(1))    // PCM
	w(uint16(1))    // mono
	w(uint32(rate)) // samples a second
	w(uint32(rate)) // bytes a second
	w(uint16(1))    // bytes a frame
	w(uint16(8))    // bits a sample
	b.WriteString("data")
	w(uint32(samples))
	b.Write(bytes.Repeat([]byte{128}, samples)) // 8-bit PCM is unsigned: 128 is silence
	return b.Bytes()
})
