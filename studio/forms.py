"""Forms of the studio pages."""
from django import forms
from django.conf import settings


class ProblemUploadForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="defaults to the file's name")
    file = forms.FileField(required=False)
    code = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}), required=False)
    device = forms.ChoiceField(choices=[("cpu", "CPU (C++ kernels)"), ("cuda", "GPU (CUDA kernels)")], initial="cpu")

    def clean(self):
        data = super().clean()
        upload, code = data.get("file"), (data.get("code") or "").strip()
        if bool(upload) == bool(code):
            raise forms.ValidationError("Upload a .py file or paste the module's code (one of the two).")
        if upload:
            if upload.size > settings.KS_UPLOAD_LIMIT_BYTES:
                raise forms.ValidationError(f"The file is {upload.size} bytes; the limit is "
                                            f"{settings.KS_UPLOAD_LIMIT_BYTES} bytes.")
            raw = upload.read()
            try:
                code = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise forms.ValidationError(f"The file is not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
            data["name"] = data.get("name") or upload.name.rsplit(".", 1)[0]
        if len(code.encode()) > settings.KS_UPLOAD_LIMIT_BYTES:
            raise forms.ValidationError(f"The code is over the limit of {settings.KS_UPLOAD_LIMIT_BYTES} bytes.")
        data["source"] = code
        data["name"] = data.get("name") or "problem"
        return data


class RunForm(forms.Form):
    policy = forms.ChoiceField(choices=[("heuristic", "Heuristic (built in, no model)"),
                                        ("openai", "Served checkpoint (OpenAI-compatible endpoint)")], initial="heuristic")
    device = forms.ChoiceField(choices=[("cpu", "CPU"), ("cuda", "GPU")])
    max_turns = forms.IntegerField(min_value=1, max_value=500, initial=60)
