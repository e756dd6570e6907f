package main
import ("testing";"fmt")
type spy struct{ loopPolicy; st *loopState; zeroHist []int }
func (s *spy) replan(now float64, st *loopState) bool { s.st = st; r := s.loopPolicy.replan(now, st); a := s.loopPolicy.(*allocPolicy); z := 0; for _, f := range a.f { if f == 0 { z++ } }; s.zeroHist = append(s.zeroHist, z); return r }
func TestZZDebug(t *testing.T){
 pages,_,_ := readPHP(defaultDataDir())
 w := newLoopWorld(pages, 4)
 for _, pi := range []int{0, 2} {
 ps,_ := loopPolicies()
 s := &spy{loopPolicy: ps[pi]}
 r := runLoop(w, s, 1.0/30, 7*loopDay)
 a := ps[pi].(*allocPolicy)
 rates := s.st.rates(w.T1)
 // pages with f=0 at end: their truth
 nz, tz := 0, 0.0
 for i, f := range a.f { if f == 0 { nz++; tz += w.truth[i] } }
 fmt.Println(r.policy, r.freshness, "zero-f pages", nz, "their true rate sum/yr", tz*loopYear, "hist", s.zeroHist[len(s.zeroHist)-5:])
 _ = rates
 }
 tot := 0.0; for _, x := range w.truth { tot += x }; fmt.Println("total true rate/yr", tot*loopYear, "pages", len(w.names))
}
