package main

func matloffSection(e *Env) {}
func malcolmSection(e *Env) {}
func nhppSection(e *Env)    {}
func ntoulasSection(e *Env) {}
func phpSection(e *Env)     {}
func nasaSection(e *Env)    {}
func bestSection(e *Env)    {}
