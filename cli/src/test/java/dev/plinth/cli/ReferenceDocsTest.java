package dev.plinth.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.common.Settings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The generated reference docs must match the code; regenerate them with the commands named in the message. */
class ReferenceDocsTest {
    private static Path docs() {
        Path directory = Path.of("").toAbsolutePath();
        while (directory != null && !Files.exists(directory.resolve("docs"))) {
            directory = directory.getParent();
        }
        return directory.resolve("docs");
    }

    @Test
    void settingsReferenceIsCurrent() throws IOException {
        assertThat(Files.readString(docs().resolve("settings.md")))
                .as("docs/settings.md is stale: run bin/plinth settings --markdown > docs/settings.md")
                .isEqualTo(Settings.markdown());
    }

    @Test
    void cliReferenceIsCurrent() throws IOException {
        assertThat(Files.readString(docs().resolve("cli.md")))
                .as("docs/cli.md is stale: run bin/plinth cli-reference > docs/cli.md")
                .isEqualTo(CliReference.markdown());
    }
}
