package main

func nhppSection(e *Env) {}
func phpSection(e *Env)  {}
func bestSection(e *Env) {}
