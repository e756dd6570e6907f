package main

func nhppSection(e *Env) {}
