// Package estimatorseval holds the evaluation of the change-rate
// estimators (package estimators) on the real history of the PHP manual
// (../shared/data/php-doc-en-history): crawlers of several visit regimes
// replayed over 2016–2017, each estimator scored against the true rate.
// Its test is the evaluation (go -C research test ./estimatorseval -v); it
// needs the data folder (internal/realdata) and is skipped in -short runs.
package estimatorseval
