package io.zskip.hosted;

/**
 * Where the hosted planner process is in its life: {@link Stopped}, {@link Waiting} (a start is
 * scheduled), {@link Starting} (launched, not registered yet) or {@link Ready} (registered: queries
 * ask it).  Each state knows the generation of the last process launched (0: none yet), the number
 * the process is started with and registers under, so a process of an older generation is never
 * mistaken for the current one.
 *
 * <p>Every transition is one method returning the next state; one that does not apply to the state it
 * is asked of throws {@link IllegalStateException}, and callers that may race with another transition
 * ask {@link #is} first.  {@link HostedPlanner} holds one state, replaced under its lock.
 *
 * @param <P> what a launched process is ({@link Process} in {@link HostedPlanner}; tests use their own)
 * @param <R> what a registered planner is
 */
sealed interface PlannerState<P, R> {
  /** The generation of the last process launched (0: none yet). */
  int generation();

  /** How {@code HostedPlanner.status()} names the state. */
  String name();

  /** The launched process, {@code null} unless {@link Starting} or {@link Ready}. */
  default P process() {
    return null;
  }

  /** The registered planner, {@code null} unless {@link Ready}. */
  default R planner() {
    return null;
  }

  /** Whether this is {@code generation}'s process, launched (starting or ready). */
  default boolean is(int generation) {
    return process() != null && generation() == generation;
  }

  /** No process, none scheduled: the application has not asked for one yet, or ended. */
  record Stopped<P, R>(int generation) implements PlannerState<P, R> {
    @Override
    public String name() {
      return "stopped";
    }
  }

  /** A start is scheduled (the first, or a restart after a backoff). */
  record Waiting<P, R>(int generation) implements PlannerState<P, R> {
    @Override
    public String name() {
      return "waiting";
    }
  }

  /** Launched as {@code generation}, not registered yet. */
  record Starting<P, R>(int generation, P process) implements PlannerState<P, R> {
    @Override
    public String name() {
      return "starting";
    }
  }

  /** Registered: queries and procedures are answered by {@code planner}. */
  record Ready<P, R>(int generation, P process, R planner) implements PlannerState<P, R> {
    @Override
    public String name() {
      return "ready";
    }
  }

  /** The first state of a planner. */
  static <P, R> PlannerState<P, R> initial() {
    return new Stopped<>(0);
  }

  /** A start is scheduled: from any state but a launched one (which must fail or stop first). */
  default PlannerState<P, R> scheduled() {
    if (process() != null) {
      throw new IllegalStateException("a start cannot be scheduled while process " + generation() + " is " + name());
    }
    return new Waiting<>(generation());
  }

  /** The next generation was launched as {@code process}: only from {@link Waiting}. */
  default PlannerState<P, R> launched(P process) {
    if (!(this instanceof Waiting)) {
      throw new IllegalStateException("a process is launched only when a start is scheduled, not when " + name());
    }
    return new Starting<>(generation() + 1, process);
  }

  /** Launching the next generation failed: it counts as started, and another start is scheduled. */
  default PlannerState<P, R> launchFailed() {
    if (!(this instanceof Waiting)) {
      throw new IllegalStateException("only a scheduled start can fail to launch, not one " + name());
    }
    return new Waiting<>(generation() + 1);
  }

  /** {@code generation}'s process registered {@code planner} (again, if it was ready). */
  default PlannerState<P, R> registered(int generation, R planner) {
    if (!is(generation)) {
      throw new IllegalStateException("process " + generation + " cannot register: the planner is " + name()
          + " with process " + generation());
    }
    return new Ready<>(generation, process(), planner);
  }

  /** The launched process failed (or exited) and another start is scheduled. */
  default PlannerState<P, R> failed() {
    if (process() == null) {
      throw new IllegalStateException("no process is launched to fail: the planner is " + name());
    }
    return new Waiting<>(generation());
  }

  /** Stopped, from any state (the process, if any, is the caller's to end). */
  default PlannerState<P, R> stopped() {
    return new Stopped<>(generation());
  }
}
