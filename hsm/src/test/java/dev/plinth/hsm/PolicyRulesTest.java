package dev.plinth.hsm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class PolicyRulesTest {
    @Test
    void theIssuesExamplesParse() {
        PolicyRules rules = PolicyRules.parse("""
                # cold datasets go down
                archive, release when atime > 30d and size >= 1MiB under /datasets
                archive to 2 when mtime > 1d under /results, "/with space"
                release when ctime<=12h
                archive
                """);
        assertThat(rules.rules()).hasSize(4);
        PolicyRules.Rule first = rules.rules().get(0);
        assertThat(first.line()).isEqualTo(2);
        assertThat(first.archiveId()).isEqualTo(1);
        assertThat(first.release()).isTrue();
        assertThat(first.conditions()).containsExactly(
                new PolicyRules.Condition(PolicyRules.Field.ATIME, ">", 30L * 86_400 * 1_000_000_000),
                new PolicyRules.Condition(PolicyRules.Field.SIZE, ">=", 1 << 20));
        assertThat(first.paths()).containsExactly("/datasets");
        PolicyRules.Rule second = rules.rules().get(1);
        assertThat(second.archiveId()).isEqualTo(2);
        assertThat(second.release()).isFalse();
        assertThat(second.paths()).containsExactly("/results", "/with space");
        assertThat(rules.rules().get(2).conditions()).containsExactly(
                new PolicyRules.Condition(PolicyRules.Field.CTIME, "<=", 12L * 3600 * 1_000_000_000));
        assertThat(rules.rules().get(2).paths()).isEqualTo(List.of("/"));
        assertThat(rules.rules().get(3).conditions()).isEmpty();
    }

    @Test
    void errorsNameTheLineAndWhatWasExpected() {
        assertThatThrownBy(() -> PolicyRules.parse("archive when atime > 30d\n\nrelease when size > lots")).hasMessage(
                "invalid argument: rules line 3: expected a size like 1MiB, found 'lots'");
        assertThatThrownBy(() -> PolicyRules.parse("compress when atime > 1d")).hasMessageContaining("rules line 1: expected an action");
        assertThatThrownBy(() -> PolicyRules.parse("archive when atime > 30 days")).hasMessageContaining("an age like 30d");
        assertThatThrownBy(() -> PolicyRules.parse("archive when atime")).hasMessageContaining("found the end of the line");
        assertThatThrownBy(() -> PolicyRules.parse("archive under datasets")).hasMessageContaining("an absolute path");
        assertThatThrownBy(() -> PolicyRules.parse("archive when size = 1")).hasMessageContaining("a comparison");
        assertThatThrownBy(() -> PolicyRules.parse("archive to two")).hasMessageContaining("an archive id");
        assertThatThrownBy(() -> PolicyRules.parse("archive when size > 1 or atime > 1d")).hasMessageContaining("'when', 'and', 'under'");
    }
}
