// Package windowseval holds the evaluation of the change windows
// (package windows) against the papers: the retrospective MSE of the
// window estimators (001 Tables 1–2 analogue), false alarms and detection
// delays of the segmentation, out-of-sample scoring on data outside the
// Weibull family and on the real php/doc-en history. Its tests are the
// evaluation; TestEvaluationReport writes docs/windows-eval.md:
//
//	go -C research test ./windowseval -run TestEvaluationReport -args -report=$PWD/docs/windows-eval.md
package windowseval
