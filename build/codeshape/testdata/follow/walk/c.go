package walk

func c1() {
	b1() // read already
	c2()
}

func c2() {}
