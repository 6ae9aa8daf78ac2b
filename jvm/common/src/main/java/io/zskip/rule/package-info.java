/**
 * zskip's optimizer rule and its memory: the rule ({@link io.zskip.rule.PlanHook}) asks a planner
 * ({@link io.zskip.rule.Planner}) once per table state and filter shape and remembers the answer
 * ({@link io.zskip.rule.RememberedPlans}); the analyzer rule the extension installs ({@link
 * io.zskip.rule.TurnOn}); statements zskip may run ({@link io.zskip.rule.Statements}); the workload
 * log ({@link io.zskip.rule.WorkloadRecords}).
 */
package io.zskip.rule;
