package main

func malcolmSection(e *Env) {}
func nhppSection(e *Env)    {}
func ntoulasSection(e *Env) {}
func phpSection(e *Env)     {}
func bestSection(e *Env)    {}
