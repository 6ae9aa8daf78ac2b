package io.zskip.hosted;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PlannerStateTest {
  private static PlannerState<String, String> stopped() {
    return PlannerState.initial();
  }

  @Test
  void aPlannerIsScheduledLaunchedAndRegistered() {
    PlannerState<String, String> state = stopped();
    assertEquals("stopped", state.name());
    assertEquals(0, state.generation());
    state = state.scheduled();
    assertEquals("waiting", state.name());
    state = state.launched("process 1");
    assertEquals("starting", state.name());
    assertEquals(1, state.generation());
    assertEquals("process 1", state.process());
    assertNull(state.planner());
    state = state.registered(1, "planner 1");
    assertEquals("ready", state.name());
    assertEquals("planner 1", state.planner());
    assertEquals("process 1", state.process());
    assertEquals("ready", state.registered(1, "planner 1 again").name()); // a second registration replaces the first
  }

  @Test
  void aFailedProcessWaitsForItsRestartUnderTheNextGeneration() {
    PlannerState<String, String> ready = stopped().scheduled().launched("p").registered(1, "r");
    PlannerState<String, String> waiting = ready.failed();
    assertEquals("waiting", waiting.name());
    assertNull(waiting.process());
    assertFalse(waiting.is(1));
    PlannerState<String, String> again = waiting.launched("q");
    assertEquals(2, again.generation());
    assertTrue(again.is(2));
    assertFalse(again.is(1)); // the old process cannot register as the new one
    assertThrows(IllegalStateException.class, () -> again.registered(1, "late"));
    assertEquals("waiting", stopped().scheduled().launched("p").failed().name()); // failing before it registered
  }

  @Test
  void aLaunchThatFailsCountsAGeneration() {
    PlannerState<String, String> state = stopped().scheduled().launchFailed();
    assertEquals("waiting", state.name());
    assertEquals(1, state.generation());
    assertEquals(2, state.scheduled().launched("p").generation());
  }

  @Test
  void stoppingKeepsTheGenerationAndEndsEveryState() {
    PlannerState<String, String> ready = stopped().scheduled().launched("p").registered(1, "r");
    PlannerState<String, String> stopped = ready.stopped();
    assertEquals("stopped", stopped.name());
    assertEquals(1, stopped.generation());
    assertNull(stopped.process());
    assertEquals("stopped", stopped().scheduled().stopped().name());
    assertEquals(2, stopped.scheduled().launched("q").generation());
  }

  @Test
  void transitionsThatDoNotApplyAreRefused() {
    PlannerState<String, String> starting = stopped().scheduled().launched("p");
    assertThrows(IllegalStateException.class, () -> stopped().launched("p")); // nothing scheduled
    assertThrows(IllegalStateException.class, starting::scheduled); // a process is running
    assertThrows(IllegalStateException.class, () -> starting.launched("q"));
    assertThrows(IllegalStateException.class, starting::launchFailed);
    assertThrows(IllegalStateException.class, () -> stopped().failed()); // no process to fail
    assertThrows(IllegalStateException.class, () -> stopped().scheduled().registered(0, "r")); // nothing launched
  }
}
