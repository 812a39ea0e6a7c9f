// Command linetopc asks debug/gosym, built into it, about the ELF binary
// named by its argument: for each hexadecimal PC on its standard input,
// the file and line of the PC (PCToLine), then the first PC of that file
// and line (LineToPC, which searches every function's tables). Built with
// the patched toolchain, its debug/gosym reads linear tables; built with
// stock Go and run on the twin, it gives the answers to compare with
// (toolchain's TestTools).
package main

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"log"
	"os"
	"strconv"
)

func main() {
	f, err := elf.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	pcln, err := f.Section(".gopclntab").Data()
	if err != nil {
		log.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, f.Section(".text").Addr))
	if err != nil {
		log.Fatal(err)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		pc, err := strconv.ParseUint(sc.Text(), 0, 64)
		if err != nil {
			log.Fatal(err)
		}
		file, line, _ := tab.PCToLine(pc)
		pc2, fn, err := tab.LineToPC(file, line)
		name := ""
		if fn != nil {
			name = fn.Name
		}
		fmt.Printf("%#x %s:%d -> %#x %s %v\n", pc, file, line, pc2, name, err != nil)
	}
}
