package io.zskip.bridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class AnswersTest {
  @Test
  void aShortAnswerCrossesDirectlyAndALongOneThroughALocalFile() throws Exception {
    assertEquals("{\"a\":1}", Answers.answer("{\"a\":1}"));
    String longText = "x".repeat(Answers.DIRECT + 1);
    String answer = Answers.answer(longText);
    assertTrue(answer.startsWith("\u0000"));
    Path file = Path.of(answer.substring(1));
    try {
      assertEquals(longText, Files.readString(file));
    } finally {
      Files.deleteIfExists(file);
    }
  }

  @Test
  void digestsAreSha256InHex() {
    assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Answers.sha256(""));
  }

  @Test
  void recentDigestsForgetTheLeastRecentlySent() {
    Answers.RecentDigests sent = new Answers.RecentDigests(2);
    assertFalse(sent.sent("a"));
    assertFalse(sent.sent("b"));
    assertTrue(sent.sent("a")); // a is now the most recent
    assertFalse(sent.sent("c")); // b goes
    assertFalse(sent.sent("b"));
    assertTrue(sent.sent("b"));
  }
}
