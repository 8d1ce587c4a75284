package dev.plinth.cli;

import dev.plinth.common.Setting;
import dev.plinth.common.Settings;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "settings", mixinStandardHelpOptions = true, description = "List every setting with its default, unit and meaning.")
final class SettingsCommand implements Callable<Integer> {
    @Option(names = "--markdown", description = "Print docs/settings.md.")
    boolean markdown;

    @Override
    public Integer call() {
        if (markdown) {
            System.out.print(Settings.markdown());
            return 0;
        }
        for (Setting<?> setting : Settings.all()) {
            System.out.printf("%-28s %-16s %s%n", setting.key(), setting.defaultValue(), setting.description());
        }
        return 0;
    }
}
