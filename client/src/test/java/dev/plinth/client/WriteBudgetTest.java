package dev.plinth.client;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class WriteBudgetTest {
    @Test
    void theBudgetLeavesMostOfTheDirectMemoryToEverythingElse() {
        assertThat(new WriteBudget(64L << 20, 64L << 20).bytes()).isEqualTo(16L << 20);
        assertThat(new WriteBudget(64L << 20, 8L << 30).bytes()).isEqualTo(64L << 20);
        assertThat(new WriteBudget(64L << 20, -1).bytes()).as("direct memory unknown").isEqualTo(64L << 20);
        assertThat(new WriteBudget(1, 1).bytes()).as("never below two read units").isEqualTo(WriteBudget.BYTES_MIN);
    }

    @Test
    void aPieceLargerThanTheBudgetTakesAllOfItInsteadOfWaitingForever() {
        WriteBudget budget = new WriteBudget(4L << 20, -1);
        int taken = budget.acquire(64 << 20);
        assertThat(budget.available()).isZero();
        budget.release(taken);
        int small = budget.acquire(5000);
        assertThat(small).isEqualTo(2);
        assertThat(budget.available()).isEqualTo((4 << 20) / WriteBudget.UNIT_BYTES - 2);
        budget.release(small);
    }
}
