package dev.sema.testing.history;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.testing.history.Event.Declare;
import dev.sema.testing.history.Event.Fail;
import dev.sema.testing.history.Event.Fault;
import dev.sema.testing.history.Event.Final;
import dev.sema.testing.history.Event.Invoke;
import dev.sema.testing.history.Event.Lifecycle;
import dev.sema.testing.history.Event.Lost;
import dev.sema.testing.history.Event.Ok;
import dev.sema.testing.history.Event.Outcome;
import dev.sema.testing.history.Event.Release;
import dev.sema.testing.history.Event.Sample;
import java.util.List;
import org.junit.jupiter.api.Test;

class HistoryFormatTest {

    @Test
    void everyEventReadsBackAsWritten() {
        List<Event> events = List.of(
                new Declare(1, "w1", "s1", 3, 2000),
                new Invoke(-2, "w1", 7, "s1", 0, "acquire"),
                new Ok(3, "w1", 7, Long.MAX_VALUE),
                new Fail(4, "w1", 8, Outcome.INTERRUPTED, "interrupted=while waiting"),
                new Lost(5, "w1", 7),
                new Release(6, "w1", 7),
                new Lifecycle(7, "w3", Lifecycle.Kind.KILL),
                new Lifecycle(8, "w3", Lifecycle.Kind.CONT),
                new Fault(9, "sched", "redis-restart", "redis", Fault.Phase.END),
                new Sample(10, "sched", "s1", 2, 1),
                new Final(11, "sched", "s1", 0, 0));
        for (Event e : events) {
            assertThat(HistoryFormat.parse(HistoryFormat.format(e))).isEqualTo(e);
        }
    }

    @Test
    void lineIsNanosProcessEventThenKeyValues() {
        assertThat(HistoryFormat.format(new Invoke(1001, "w1", 7, "s1", 2, "timed")))
                .isEqualTo("1001 w1 invoke req=7 sem=s1 permits=2 kind=timed");
        assertThat(HistoryFormat.format(new Fault(5, "sched", "partition", "w4", Fault.Phase.BEGIN)))
                .isEqualTo("5 sched fault kind=partition target=w4 phase=begin");
    }

    @Test
    void freeTextIsKeptToOneToken() {
        Fail f = new Fail(1, "w1", 8, Outcome.ERROR, "Redis\tunreachable:\nconnection reset token=5");
        assertThat(f.reason()).isEqualTo("Redis_unreachable:_connection_reset_token=5");
        Event back = HistoryFormat.parse(HistoryFormat.format(f));
        assertThat(back).isEqualTo(f);
        assertThat(new Fail(1, "w1", 8, Outcome.ERROR, "").reason()).isEqualTo("-");
        assertThat(new Fail(1, "w1", 8, Outcome.ERROR, "x".repeat(5000)).reason()).hasSize(HistoryFormat.MAX_TEXT);
    }

    @Test
    void namesWithWhitespaceAreRefused() {
        assertThatThrownBy(() -> new Invoke(1, "w 1", 1, "s1", 1, "acquire"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Sample(1, "sched", "s\n1", 1, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Declare(1, "w1", "", 1, 1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void keysMayComeInAnyOrderAndUnknownOnesAreIgnored() {
        assertThat(HistoryFormat.parse("5 w2   ok token=9 by=sched req=3"))
                .isEqualTo(new Ok(5, "w2", 3, 9));
    }

    @Test
    void blankAndCommentLinesAreNoEvents() {
        assertThat(HistoryFormat.parse("")).isNull();
        assertThat(HistoryFormat.parse("# sema history")).isNull();
    }

    @Test
    void malformedLinesAreRefused() {
        for (String line : List.of("5 w1", "x w1 start", "5 w1 jump", "5 w1 ok req=3", "5 w1 ok req=3 token=1x",
                "5 w1 ok req=3 req=4 token=1", "5 w1 ok req3 token=1", "5 w1 fail req=1 outcome=bored reason=-",
                "5 w1 invoke req=1 sem=s permits=-1 kind=try", "5 s fault kind=k target=t phase=middle")) {
            assertThatThrownBy(() -> HistoryFormat.parse(line)).as(line).isInstanceOf(IllegalArgumentException.class);
        }
    }
}
